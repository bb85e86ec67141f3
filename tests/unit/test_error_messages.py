"""A refusal is said in the page's language, and a sentence out of step with its error still says something;
a file's refusal in Chinese is one plain sentence that names no field and quotes no Python value."""

import json
import re

import gradio as gr
import pytest

from engine.environment import Limits
from engine.errors import InvalidRequest
from tests.paths import ROOT
from ui.host.errors import message
from ui.host.uploads import read_upload


def test_a_keyed_refusal_is_said_in_chinese_and_stays_english_for_english():
    exc = InvalidRequest("step 9 is outside this run's steps 0..3", "fork_step", step="9", last=3)
    assert message(exc, "en") == str(exc)
    assert "第 9 步" in message(exc, "zh") and "3" in message(exc, "zh")


def test_a_sentence_missing_a_value_falls_back_to_the_english_message():
    exc = InvalidRequest("step 9 is outside this run's steps", "fork_step", step="9")     # no `last`
    assert message(exc, "zh") == str(exc)
    assert message(InvalidRequest("plain", "no_such_key"), "zh") == "plain"


# --- a file's refusal in Chinese: one plain sentence, no field path, no Python repr --------------
KEPT_LATIN = ("Token by Token", "JSON", "KV")     # the product's name, a format, a kept term


def refusal(tmp_path, content: str, lang: str) -> str:
    path = tmp_path / "upload.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(gr.Error) as refused:
        read_upload(str(path), Limits(), lang)
    return refused.value.message


def latin_left(text: str) -> str:
    for kept in KEPT_LATIN:
        text = text.replace(kept, "")
    return "".join(re.findall(r"[A-Za-z_'\"]+", text))


def trace_with(change) -> str:
    data = json.loads((ROOT / "tests" / "fixtures" / "trace_zh.json").read_text(encoding="utf-8"))
    change(data)
    return json.dumps(data, ensure_ascii=False)


def _stop_reason(d):
    d["summary"]["stop_reason"] = "zzz"


def _prefill_tokens(d):
    d["attention"]["prefill_tokens"] = 40_000_000


def _layers_text(d):
    d["model"]["layers"] = "thirty"


def _no_settings(d):
    del d["settings"]


HOSTILE = {
    "not a trace": ('{"hello": 1}', "不是 Token by Token 保存的记录文件", "schema"),
    "an unknown stop reason": (trace_with(_stop_reason), "汇总部分", "summary.stop_reason"),
    "a size over its data": (trace_with(_prefill_tokens), "注意力数据", "attention.prefill_tokens"),
    "a number written as text": (trace_with(_layers_text), "模型信息", "trace.model.layers"),
    "a missing section": (trace_with(_no_settings), "缺了一项必需的数据", "settings"),
    "not JSON": ("\x89PNG binary", "不是有效的 JSON", "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_file_refused_in_chinese_names_no_field_and_quotes_no_repr(tmp_path, case):
    content, plain, developer = HOSTILE[case]
    zh = refusal(tmp_path, content, "zh")
    assert zh.startswith("这个文件无法载入：") and plain in zh, zh
    assert zh.count("：") == 1 and zh.endswith("。"), zh                 # one sentence, one prefix
    assert latin_left(zh) == "", (zh, latin_left(zh))                      # no field name, no None, no repr
    en = refusal(tmp_path, content, "en")                                  # the developer's words stay in English
    assert developer in en, en
