"""The load script (`python -m tests.load`, run by hand: `make load`) without a server: its inputs,
and the comparison it relies on (its run against the live app: tests/app/test_load_script.py)."""

import copy

import numpy as np

from engine.schema.packed import PackedRows
from tests.load import differences, inputs
from tests.unit.test_viz_data import load


def test_inputs_mix_greedy_and_seeded_sampling_all_capturing():
    requests = inputs(2, 2, 8)
    assert {r["temperature"] for r in requests} == {0.0, 0.8}
    assert len({r["seed"] for r in requests}) == 4
    assert all(r["attention"] and r["logit_lens"] for r in requests)
    assert not any(r["attention"] or r["logit_lens"] for r in inputs(2, 2, 8, capture=False))


def test_a_trace_differs_where_its_captures_differ():
    """The comparison the load test relies on sees a changed attention row or lens guess."""
    want = load("trace_en_sampled.json")
    assert differences(copy.deepcopy(want), want) == []
    rows = copy.deepcopy(want)
    block = rows.attention.steps[3].unpack()
    block[5, 2] = np.roll(block[5, 2], 1)              # one head's row in one layer, shifted by a key
    rows.attention.steps[3] = PackedRows.pack(block)
    assert differences(rows, want) == ["attention rows 3"]
    prefill = copy.deepcopy(want)
    prefill.attention.prefill[7] = prefill.attention.prefill[8]   # another layer's maps
    assert differences(prefill, want) == ["attention prefill 7"]
    lens = copy.deepcopy(want)
    lens.steps[2].lens[4].id += 1
    assert differences(lens, want) == ["lens at step 2"]
    tokens = copy.deepcopy(want)
    tokens.steps[-1].id += 1
    assert differences(tokens, want) == ["tokens"]
