"""The page's upload boxes (the Trace file tab, the serving floor) refuse a file in one plain sentence
of the page's language, on the box: no parser's words ("'utf-8' codec can't decode byte 0x98…"), no
field path, no Python value, and no browser-side type check that says an English "Error" first."""

import re
from types import SimpleNamespace

import pytest

from engine.environment import Limits
from engine.schema.floor_check import read_floor
from tests.unit.test_error_messages import HOSTILE as FIELD_CASES
from ui.chapters.trace_file import TraceFile

# files a visitor may pick by mistake: bytes that are not text, text that is not JSON
NOT_JSON = {
    "a picture": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x98\xff\x00",
    "a file starting with byte 0x98": b"\x98\x01\x02 hello",
    "a text note": "my notes about the run\nline two\n".encode(),
    "a half-written JSON": b'{"schema": "token-by-token/trace@3", "model": {',
}
CASES = {**NOT_JSON, **{name: content.encode() for name, (content, _, _) in FIELD_CASES.items()}}
# what a plain sentence never holds: a decoder's or parser's words, a field's path, a Python value
NOT_PLAIN = re.compile(r"codec|decode|utf-?8|Expecting|line \d+ column|\(char \d+\)|Traceback|\bNone\b|"
                       r"\w+\.\w+|\w+\[\d+\]|'[^']*'|\"", re.IGNORECASE)
OPENING = {"en": "this file is not a usable trace: ", "zh": "这个文件无法载入："}


@pytest.fixture(scope="module")
def box():
    return TraceFile(SimpleNamespace(limits=Limits()))


def said_on_the_box(box, tmp_path, content: bytes, lang: str, suffix=".json") -> dict:
    path = tmp_path / f"upload{suffix}"
    path.write_bytes(content)
    return box.check(str(path), lang)[box.upload]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_upload_is_refused_in_one_plain_sentence_on_the_box(box, tmp_path, case, lang):
    shown = said_on_the_box(box, tmp_path, CASES[case], lang)
    said = shown["message"]
    assert shown["is_valid"] is False and said.startswith(OPENING[lang]), said
    assert not NOT_PLAIN.search(said), (said, NOT_PLAIN.search(said))
    assert said.count(":") + said.count("：") == 1, said          # one sentence after its opening
    assert "\n" not in said and len(said) < 200, said


@pytest.mark.parametrize("suffix", [".txt", ".png", ""])
def test_a_file_of_any_name_reaches_the_validator(box, tmp_path, suffix):
    """The browser refuses a file type the box does not list with its own English toast and a red
    "Error" on the box: the boxes list none, and the validator says why in the page's language."""
    assert box.upload.file_types is None
    said = said_on_the_box(box, tmp_path, b"just some words", "zh", suffix)["message"]
    assert said == "这个文件无法载入：它不是有效的 JSON 文件。", said


def test_a_good_trace_passes_the_box(box, tmp_path):
    from tests.paths import FIXTURES
    shown = said_on_the_box(box, tmp_path, (FIXTURES / "trace_zh.json").read_bytes(), "en")
    assert shown["is_valid"] is True and shown["message"] == ""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_floors_box_says_it_as_plainly(tmp_path, lang):
    from ui.host.uploads import read_upload
    import gradio as gr
    path = tmp_path / "floor.json"
    path.write_bytes(NOT_JSON["a picture"])
    with pytest.raises(gr.Error) as refused:
        read_upload(str(path), Limits(), lang, reader=read_floor, unusable="floor_unusable", plain=True)
    said = refused.value.message
    assert not NOT_PLAIN.search(said) and ("JSON" in said), said


def test_the_api_keeps_the_field_path_for_english_callers(tmp_path):
    """/read_trace and the other endpoints (plain=False) still name the field for a developer."""
    from ui.host.uploads import read_upload
    import gradio as gr
    content, _, developer = FIELD_CASES["an unknown stop reason"]
    path = tmp_path / "t.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(gr.Error) as refused:
        read_upload(str(path), Limits(), "en")
    assert developer in refused.value.message
