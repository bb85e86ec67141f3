"""Every word on the page exists in English and Simplified Chinese."""

import re

import pytest

from ui.i18n import I18N, STRINGS, lang_of, t
from viz.labels import LABELS


@pytest.mark.parametrize("table", [STRINGS, LABELS], ids=["page", "charts"])
def test_every_key_has_both_languages(table):
    missing = [k for k, v in table.items() if not (v.get("en", "").strip() and v.get("zh", "").strip())]
    assert not missing, missing
    placeholders = re.compile(r"\{(\w+)\}")
    for key, v in table.items():     # the same {placeholders} in both, so .format() works in both
        assert set(placeholders.findall(v["en"])) == set(placeholders.findall(v["zh"])), key


TERMS = {"token", "logit", "top_p", "lab_unavailable"}   # technical terms and pure templates


def test_chinese_is_chinese():
    for key, v in {**STRINGS, **LABELS}.items():
        if re.search(r"[A-Za-z]{4,}", v["en"]) and key not in TERMS:
            assert re.search(r"[\u4e00-\u9fff]", v["zh"]), f"{key}: zh text has no Chinese: {v['zh']!r}"


def test_gradio_i18n_holds_every_key_for_browser_locales():
    for locale in ("en", "zh", "zh-CN"):
        assert set(I18N.translations[locale]) == set(STRINGS), locale
    assert I18N.translations["zh-CN"]["run"] == "运行"
    with pytest.raises(KeyError):
        t("no-such-key")
    assert lang_of("zh-CN") == "zh" and lang_of("en-US") == "en" and lang_of(None) == "en"


def test_walkthrough_has_eight_steps_in_both_languages():
    assert all(f"wt_{i}_title" in STRINGS and f"wt_{i}_text" in STRINGS for i in range(8))
    assert "wt_8_title" not in STRINGS
