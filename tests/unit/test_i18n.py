"""Every word on the page exists in English and Simplified Chinese, and says each concept with the
glossary's one term (assets/strings/glossary.json)."""

import re

import pytest

from ui.page.i18n import I18N, STRINGS, lang_of, t
from viz.text import strings
from viz.text.labels import LABELS
from tests.paths import ROOT

ERRORS = strings.errors()


@pytest.mark.parametrize("table", [STRINGS, LABELS, ERRORS], ids=["page", "charts", "errors"])
def test_every_key_has_both_languages(table):
    missing = [k for k, v in table.items() if not (v.get("en", "").strip() and v.get("zh", "").strip())]
    assert not missing, missing
    placeholders = re.compile(r"\{(\w+)\}")
    for key, v in table.items():     # the same {placeholders} in both, so .format() works in both
        assert set(placeholders.findall(v["en"])) == set(placeholders.findall(v["zh"])), key


TERMS = {"token", "logit", "top_p", "lab_unavailable"}   # technical terms and pure templates


def test_chinese_is_chinese():
    for key, v in {**STRINGS, **LABELS, **ERRORS}.items():
        if re.search(r"[A-Za-z]{4,}", v["en"]) and key not in TERMS:
            assert re.search(r"[\u4e00-\u9fff]", v["zh"]), f"{key}: zh text has no Chinese: {v['zh']!r}"


def test_gradio_i18n_holds_every_key_for_browser_locales():
    for locale in ("en", "zh", "zh-CN"):
        assert set(I18N.translations[locale]) == set(STRINGS), locale
    assert I18N.translations["zh-CN"]["run"] == "运行"
    with pytest.raises(KeyError):
        t("no-such-key")
    assert lang_of("zh-CN") == "zh" and lang_of("en-US") == "en" and lang_of(None) == "en"


def test_the_walkthrough_has_one_count_of_steps():
    """The catalogue's list of steps, the step table the tab and the deck read, and the page's strings agree."""
    from ui.walkthrough.steps import STEPS
    n = strings.step_count()
    assert n == len(STEPS) == 10
    assert all(f"wt_{i}_title" in STRINGS and f"wt_{i}_text" in STRINGS for i in range(n))
    assert f"wt_{n}_title" not in STRINGS


def test_one_list_of_lab_experiments():
    """engine/schema/lab.py names the lab's experiments; the page's sections and viz's summaries follow it."""
    from engine.schema.lab import EXPERIMENTS
    from ui.chapters.lab import SECTIONS, SUMMARIES
    assert tuple(SECTIONS) == EXPERIMENTS and set(SUMMARIES) == set(EXPERIMENTS)


def test_one_list_of_languages():
    """Every catalogue entry speaks exactly the languages of viz.text.strings.LANGS, and gr.I18n holds each."""
    for key, entry in {**STRINGS, **LABELS, **ERRORS}.items():
        assert set(entry) == set(strings.LANGS), key
    assert set(strings.LANGS) <= set(I18N.translations)


GLOSSARY = strings.glossary()


@pytest.mark.parametrize("entry", GLOSSARY, ids=[g["en"] for g in GLOSSARY])
def test_one_term_per_concept(entry):
    """No text in the catalogue says a glossary concept with a variant the glossary rules out, and
    the chosen term is used somewhere in each language."""
    texts = strings.every_text()

    def said(v: dict, lang: str, variant: str) -> str:
        """The text without its {placeholders}, a term glossed with its English name read as the term."""
        return re.sub(r"\{\w+\}", "", v[lang].replace(f"{entry[lang]}（{variant}）", entry[lang])).lower()
    for lang, variants in entry.get("avoid", {}).items():
        for variant in variants:
            found = [name for name, v in texts.items() if variant.lower() in said(v, lang, variant)]
            assert not found, f"{variant!r} ({lang}) instead of {entry[lang]!r} in {found}"
    for lang in ("en", "zh"):
        assert any(entry[lang].lower() in v[lang].lower() for v in texts.values()), (lang, entry[lang])


def test_the_glossary_terms_are_the_ones_the_chapters_use():
    page = strings.page()
    assert "逐 token 生成" in page["tab_decode"]["zh"] and "首 token 延迟" in page["wt_4_text"]["zh"]
    assert "每 token 生成时间" in page["wt_4_text"]["zh"] and "思考模式" in page["reasoning_head"]["zh"]


def test_the_ttft_analogy_puts_the_first_wait_before_the_gaps():
    """TTFT is a wait before anything arrives; TPOT the gap between later arrivals (not a speed
    after the first arrival, as the old delivery analogy had it)."""
    en, zh = strings.page()["wt_4_text"]["en"], strings.page()["wt_4_text"]["zh"]
    assert "first dish" in en and "between each following dish" in en
    assert "第一道菜上桌" in zh and "每两道菜之间" in zh
    assert "rider" not in en and "骑手" not in zh


def test_no_strings_outside_the_catalogue():
    """The catalogue is the one place: the old string files are gone."""
    root = ROOT
    assert not (root / "assets" / "i18n.json").exists() and not (root / "assets" / "walkthrough.json").exists()
    assert not list((root / "viz").glob("labels_*.py"))


def test_a_refusal_is_said_in_chinese_with_chinese_punctuation():
    """The engine's refusals carry a key; ui/host/errors.py says them from the catalogue in the page's
    language, and in English as the engine's own message."""
    from engine.environment import Limits
    from engine.errors import InvalidRequest, TraceFormatError
    from engine.run.protocol import RunSettings, checked
    from engine.run.request import clean_prompt
    from engine.schema.validate import read_trace
    from ui.host.errors import message
    refusals = []
    for call in (lambda: clean_prompt(" ", Limits()), lambda: clean_prompt("x" * 30_000, Limits()),
                 lambda: checked(RunSettings, {"top_p": 0.0}, Limits()),
                 lambda: checked(RunSettings, {"seed": "many"}, Limits()),
                 lambda: read_trace(b"\x89PNG"), lambda: read_trace('{"schema": "someone-else"}')):
        with pytest.raises((InvalidRequest, TraceFormatError)) as info:
            call()
        refusals.append(info.value)
    for exc in refusals:
        assert f"err_{exc.key}" in ERRORS, exc
        assert message(exc, "en") == str(exc)        # English: the engine's own words (API detail, CLI, log)
        if not exc.key.startswith("trace_"):         # a file's refusal is said plainly, its field left to the log
            assert ERRORS[f"err_{exc.key}"]["en"].format(**exc.values) == str(exc)
        zh = message(exc, "zh")
        assert re.search(r"[\u4e00-\u9fff]", zh) and zh != str(exc), zh
    for key, v in ERRORS.items():
        assert not re.search(r"[\"']|[\u4e00-\u9fff][,.:;()]|[,.:;()][\u4e00-\u9fff]",
                             re.sub(r"\{\w+\}", "", v["zh"])), (key, v["zh"])
