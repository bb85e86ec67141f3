"""Reading a trace file through pydantic (engine/schema/serial.py): strict kinds, the header before the
fields, the size cap before parsing; each refusal the same TraceFormatError as the hand-written reader
gave (its English naming the field's path, its zh one plain sentence), and real files read unchanged."""

import json
import math

import pytest

from engine import Trace, TraceFormatError
from engine.schema.floor import Floor
from engine.schema.serial import from_plain
from tests.paths import FIXTURES, ROOT
from ui.host.errors import message

BASE = (FIXTURES / "trace_zh.json").read_text(encoding="utf-8")

# (change to the fixture, its key, what the English message says)
MALFORMED = {
    "text for an integer": (lambda d: d["summary"].update(new_tokens="6"), "trace_wrong_type",
                            "trace.summary.new_tokens: expected an integer, got str"),
    "a float for an integer": (lambda d: d["summary"].update(new_tokens=6.0), "trace_wrong_type",
                               "trace.summary.new_tokens: expected an integer"),
    "a flag for an integer": (lambda d: d["model"].update(layers=True), "trace_wrong_type", "trace.model.layers"),
    "1 for a flag": (lambda d: d["settings"].update(use_cache=1), "trace_wrong_type", "trace.settings.use_cache"),
    "null for a number": (lambda d: d["steps"][1]["candidates"][0].update(p_model=None), "trace_wrong_type",
                          "trace.steps[1].candidates[0].p_model: expected a finite number"),
    "NaN": (lambda d: d["steps"][0].update(ms=math.nan), "trace_wrong_type", "trace.steps[0].ms"),
    "a missing field": (lambda d: d["steps"][0].pop("id"), "trace_missing_field", "trace.steps[0]: missing field 'id'"),
    "an object for a list": (lambda d: d.update(steps={}), "trace_wrong_type", "trace.steps: expected a list"),
    "broken base64": (lambda d: d["attention"]["prefill"][0].update(data="%%%"), "trace_bad_base64",
                      "trace.attention.prefill[0].data: invalid base64"),
    "another schema": (lambda d: d.update(schema="other/trace@9"), "trace_not_ours", "not a Token by Token trace"),
    "no schema": (lambda d: d.pop("schema"), "trace_not_ours", "not a Token by Token trace"),
    "another schema and wrong kinds": (lambda d: d.update(schema="x", steps="many"), "trace_not_ours", "schema is 'x'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_is_refused_as_before(case):
    change, key, english = MALFORMED[case]
    data = json.loads(BASE)
    change(data)
    with pytest.raises(TraceFormatError) as info:
        Trace.from_json(json.dumps(data, ensure_ascii=False))
    assert info.value.key == key and english in str(info.value), str(info.value)
    zh = message(info.value, "zh")
    assert zh.endswith("。") and "NoneType" not in zh and "trace." not in zh, zh


@pytest.mark.parametrize("text", ["", "[1]", "null", "[" * 200_000 + "]" * 200_000, b"\x89PNG\r\n\x1a\n\x00",
                                  BASE[:5000]], ids=["empty", "a list", "null", "deep", "binary", "truncated"])
def test_what_is_no_trace_object_is_refused(text):
    with pytest.raises(TraceFormatError) as info:
        Trace.from_json(text)
    assert info.value.key in ("trace_not_json", "trace_not_ours"), info.value


def test_the_size_cap_comes_before_parsing():
    with pytest.raises(TraceFormatError, match="the limit is 1,000") as info:
        Trace.from_json("[" * 5_000, max_bytes=1_000)           # not JSON either: the cap is said first
    assert info.value.key == "trace_too_big"


def test_real_files_read_and_round_trip():
    for path in [*FIXTURES.glob("trace_*.json"), *(ROOT / "assets" / "traces").glob("*-*.json")]:
        trace = Trace.from_json(path.read_text(encoding="utf-8"))
        assert Trace.from_json(trace.to_json()) == trace, path
        assert isinstance(trace.steps[0].ms, float) and isinstance(trace.steps[0].id, int)


def test_a_floor_file_and_a_back_room_result_read_strictly():
    data = json.loads((ROOT / "assets" / "floor" / "recorded.json").read_text(encoding="utf-8"))
    assert from_plain(Floor, data, "floor") == Floor.from_json(json.dumps(data), max_bytes=10**8)
    data["settings"]["requests"] = "8"
    with pytest.raises(TraceFormatError, match=r"floor.settings.requests: expected an integer"):
        from_plain(Floor, data, "floor")
