"""The hidden-state blocks a run keeps for the logit lens (Step.hidden): they round-trip through
JSON, and a file whose block lies about its shape or size is refused before any model sees it."""

import base64
import json

import numpy as np
import pytest

from engine import Trace, TraceFormatError
from engine.environment import Limits
from engine.schema.validate import validate
from tests.paths import FIXTURES


def _doc() -> dict:
    return json.loads((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))


def _with_hidden(doc: dict, rows: int | None = None, cols: int | None = None, data_rows: int | None = None) -> dict:
    """Step 0 carries a hidden block: [rows, cols] claimed, `data_rows` x hidden float32 actually stored."""
    m = doc["model"]
    rows = m["layers"] - 1 if rows is None else rows
    cols = m["hidden_size"] if cols is None else cols
    data_rows = rows if data_rows is None else data_rows
    values = np.arange(data_rows * m["hidden_size"], dtype="<f4")
    doc["steps"][0]["hidden"] = {"shape": [rows, cols], "data": base64.b64encode(values.tobytes()).decode()}
    return doc


def _read(doc: dict) -> Trace:
    return validate(Trace.from_json(json.dumps(doc)), Limits())


def test_a_well_formed_block_round_trips():
    doc = _with_hidden(_doc())
    trace = _read(doc)
    block = trace.steps[0].hidden
    m = trace.model
    assert block.shape == [m.layers - 1, m.hidden_size] and len(block.data) == 4 * (m.layers - 1) * m.hidden_size
    again = Trace.from_json(trace.to_json())
    assert again.steps[0].hidden == block and again.steps[1].hidden is None


HOSTILE = {
    "rows_claimed_for_all_layers": lambda d: _with_hidden(d, rows=d["model"]["layers"]),
    "wrong_width": lambda d: _with_hidden(d, cols=d["model"]["hidden_size"] + 1),
    "data_too_short": lambda d: _with_hidden(d, data_rows=3),
    "data_too_long": lambda d: _with_hidden(d, data_rows=d["model"]["layers"] + 5),
    "huge_shape": lambda d: _with_hidden(d, rows=2**31, cols=2**31, data_rows=1),
    "negative_shape": lambda d: _with_hidden(d, rows=-1, cols=-d["model"]["hidden_size"], data_rows=1),
    "three_dimensions": lambda d: d["steps"][0].__setitem__("hidden", {"shape": [1, 2, 3], "data": ""}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_malformed_block_is_refused(name):
    doc = _doc()
    HOSTILE[name](doc)
    with pytest.raises(TraceFormatError) as refused:
        _read(doc)
    assert refused.value.key == "trace_field" and "steps[0].hidden" in str(refused.value)


@pytest.mark.parametrize("bad", [{"shape": [2, 3]}, {"shape": "x", "data": ""}, {"shape": [1], "data": "!!"}])
def test_a_block_that_is_not_a_block_is_refused(bad):
    doc = _doc()
    doc["steps"][0]["hidden"] = bad
    with pytest.raises(TraceFormatError):
        _read(doc)
