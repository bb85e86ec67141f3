"""Every number a sentence of the catalogue states comes from a measurement, the model's config or
the code's own constant, through a `{placeholder}`; the only digits written into the text are facts
about the world, each allowed below with its reason. And the Chinese text keeps its own
punctuation and the glossary's one spelling."""

import re

import pytest

from ui.page.i18n import I18N, STRINGS, facts
from viz.text import strings
from viz.text.facts import fill, fmt_count

TEXTS = strings.every_text()
PLACEHOLDER = re.compile(r"\{\w+(?:[:!][^{}]*)?\}")   # {n}, {ms:.0f}
CODE = re.compile(r"`[^`]*`")          # a command or an environment variable, quoted as code

# Digits a sentence may state because they are facts about the world or names, not measurements.
# Keep this short: anything a run, the config or a constant of the code decides is a placeholder.
WORLD = [
    (r"\d · ", "a chapter or lab section's number, as its tab names it (\"5 · Speed\")"),
    (r"→ \d\b", "a pointer to a chapter (\"Explore → 7\")"),
    (r"\b(?:fp|bf|int|nf|float|bfloat)\d+|\bQ4_1\b|\d+-bit|\d+ 位", "number formats, named by their width"),
    (r"UTF-8|base64|FlashAttention-2|E2EL|\bo[13]\b|DeepSeek-R1|Qwen3|SmolLM2|Llama-3(?:\.1)?-\d+B",
     "names of an encoding, a kernel, a metric and models"),
    (r"1 nat ≈ 1\.44 bits|1 奈特 ≈ 1\.44 比特|0\.69 ?\(ln 2\)|0\.69（ln 2）", "units: a nat in bits, ln 2"),
    (r"\b95 ?%|95th percentile|第 95 百分位数|\bp95\b", "the conventional level of an interval and a percentile"),
    (r"\b2 (?:\(K and V\) )?×|2（K 和 V）×", "the formula's K and V, and 2 FLOP per weight and token"),
    (r"− 1\b", "TPOT's formula: the gaps between n tokens are n − 1"),
    (r"at least 2 tokens|至少需要 2 个 token", "a gap needs two tokens (TPOT's definition)"),
    (r"(?<![\d.,])[01](?![\d.,]\d)", "0 and 1 as the controls' conventions (0 = off, temperature 0, step 0)"),
]
PROMPTS = {"walkthrough:prompt:question"}   # a prompt the model answers, not a claim of the page


def digits_left(text: str) -> str:
    text = CODE.sub("", PLACEHOLDER.sub("", text))
    for pattern, _why in WORLD:
        text = re.sub(pattern, "", text)
    return text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_number_is_written_into_a_sentence(lang):
    found = {name: re.findall(r".{0,20}\d.{0,20}", digits_left(v[lang]))
             for name, v in TEXTS.items() if name not in PROMPTS}
    found = {name: hits for name, hits in found.items() if hits}
    assert not found, found


def test_the_allow_list_does_not_hide_a_measurement():
    """The allow-list lets facts through, not numbers a run decides."""
    for claim in ("Batch 8 gave", "asks 20 of them", "k = 1 … 16", "weights below 0.001",
                  "1, 2, 4, 8 concurrent", "12.8 万的上下文", "135 百万参数", "is 13 tokens"):
        assert re.search(r"\d", digits_left(claim)), claim


def test_the_fixed_texts_have_every_number_filled():
    """The walkthrough's narration, the chapters' introductions and legends go through gr.I18n as
    fixed text: their placeholders are filled from the recording, the config and the recorded lab."""
    for lang in ("en", "zh"):
        shown = I18N.translations[lang]
        left = {k: PLACEHOLDER.findall(shown[k]) for k in STRINGS
                if re.fullmatch(r"wt_\d+_(?:title|intro|text|legend|more)", k)
                or k in ("load_sweep", "logit_lens_info")}
        assert not any(left.values()), {k: v for k, v in left.items() if v}
    assert facts("en")["kv_heads"] == "3" and facts("en")["heads"] == "9"    # SmolLM2's config: GQA
    assert "3 KV heads" in I18N.translations["en"]["wt_2_more"]
    assert fill("{a} and {b}", {"a": "x"}) == "x and {b}"


def test_counts_are_said_as_each_language_says_them():
    assert fmt_count(134_515_008, "en") == "135 million" and fmt_count(134_515_008, "zh") == "1.35 亿"
    assert fmt_count(8.03e9, "en") == "8.03 billion" and fmt_count(8.03e9, "zh") == "80.3 亿"


ZH = {name: CODE.sub("", PLACEHOLDER.sub("", v["zh"])) for name, v in TEXTS.items()}
HAN = r"[\u4e00-\u9fff]"


def test_chinese_uses_full_width_quotes_and_parentheses():
    ascii_quotes = [n for n, z in ZH.items() if '"' in z]
    assert not ascii_quotes, ascii_quotes
    half_parens = [n for n, z in ZH.items()
                   if re.search(rf"{HAN}\s*\(|\)\s*{HAN}|\([^()]*{HAN}[^()]*\)", z)]
    assert not half_parens, half_parens


def test_one_spelling_per_term():
    """top-p and top-k as their parameters are named; every 区间 a confidence interval; one word
    for the decode step in Chinese."""
    for lang in ("en", "zh"):
        capital = [n for n, v in TEXTS.items() if re.search(r"Top-[pk]", v[lang])]
        assert not capital, (lang, capital)
    bare = [n for n, z in ZH.items() if re.search(r"(?<!置信)区间", z)]
    assert not bare, bare
    assert "解码" in STRINGS["tab_decode"]["zh"] and "逐 token 生成" in STRINGS["tab_decode"]["zh"]


def test_the_seed_ideas_are_said():
    """The seed article's ideas the chapters must carry (autoregression, streaming, the serving
    limits of KV memory, training-time vs test-time scaling, model size and hardware)."""
    page = strings.page()
    assert "自回归" in page["wt_3_text"]["zh"] and "autoregressive" in page["wt_3_text"]["en"]
    assert "流式" in page["wt_3_text"]["zh"] and "stream" in page["wt_3_text"]["en"]
    assert "{kv_heads}" in page["wt_2_more"]["en"] and "batch size" in page["wt_2_text"]["en"]
    assert "training-time" in page["wt_6_text"]["en"] and "训练时" in page["wt_6_text"]["zh"]
    # hardware: the seed's V100 -> H100 remark, said with the recording's own projection (its floors)
    assert all("{old_gpu}" in page["wt_4_text"][lang] and "{new_floor}" in page["wt_4_text"][lang] for lang in ("en", "zh"))
    assert "{weights_mb}" in page["wt_4_more"]["zh"] and "{kv_read}" in page["wt_4_more"]["zh"]
    assert "queue" in page["wt_4_more"]["en"] and "排队" in page["wt_4_more"]["zh"]


def test_a_projector_gets_the_narration_and_the_page_the_details():
    """Presenter mode shows the narration only (it must fit 1280x720); the details under it are for
    the page (hidden on a projector by assets/page.css)."""
    from tests.paths import ROOT
    css = (ROOT / "assets" / "page.css").read_text(encoding="utf-8")
    assert "body.tbt-present .tbt-wt-more { display: none" in css
    from ui.walkthrough.steps import STEPS
    page = strings.page()
    steps = range(len(STEPS))
    assert all(len(page[f"wt_{i}_text"]["en"]) <= 600 and len(page[f"wt_{i}_text"]["zh"]) <= 280
               for i in steps), [(i, len(page[f"wt_{i}_text"]["en"])) for i in steps]


def test_the_tokens_chapter_counts_the_template_only_when_one_was_applied():
    """The recording is raw text: its Tokens chapter must not speak of a chat template."""
    from ui.host.recordings import recorded
    from viz.html.chips import prompt_html
    for lang in ("en", "zh"):
        trace = recorded(lang)["next"]
        assert not trace.settings.chat_template
        assert strings.charts()["prompt_tmpl_tokens"][lang] not in prompt_html(trace, lang=lang)
        assert strings.charts()["prompt_raw_tokens"][lang] in prompt_html(trace, lang=lang)


def test_the_status_line_says_speed_as_the_cards_do_with_the_page_punctuation():
    from ui.chapters.run import status_md
    from ui.host.recordings import recorded
    zh, en = status_md(recorded("zh")["next"], "zh"), status_md(recorded("en")["next"], "en")
    assert "token/秒" in zh and "每秒 token 数" not in zh and "已生成 token" in zh and "解码步" not in zh
    assert not re.search(r"[:,](?=\s)", zh.replace("TTFT", "").replace("TPOT", "")), zh
    assert "tok/s" in en and "tokens 24/" in en and "decode step" not in en     # step 0 is the prefill's


def test_every_chapter_says_what_its_numbers_are():
    """Each chapter's legend (under its introduction in Explore, under the narration in the
    walkthrough) names what is measured, and only the chapters with a formula or a projection
    name those."""
    from ui.walkthrough.steps import STEPS
    page = strings.page()
    assert {f"wt_{i}_legend" for i in range(len(STEPS))} == {k for k in page if k.endswith("_legend") and k.startswith("wt_")}
    for i, step in enumerate(STEPS):
        en, zh = page[f"wt_{i}_legend"]["en"], page[f"wt_{i}_legend"]["zh"]
        assert "**Measured**" in en and "**实测**" in zh, i
        assert ("**Projection**" in en) == ("**推算**" in zh) == (step.chapter in ("kv", "lab")), i
