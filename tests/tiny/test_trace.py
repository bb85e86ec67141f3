"""Every tiny architecture, watched (attention + the logit lens on), picks the tokens `model.generate`
picks; its attention rows are probability rows; the lens is shown on view."""

import numpy as np
import pytest

from engine import Settings, run_trace
from engine.matrix.measure import reference_tokens
from engine.model.lens import steps_lens
from tests import numerics
from tests.tiny.models import ARCHS

PROMPT = "The quick brown fox jumps over the lazy dog, and then"
STEPS = 10



@pytest.fixture(scope="module")
def watched():
    return {}


def watched_run(arch, tiny_engine, watched):
    if arch not in watched:
        engine = tiny_engine(arch)
        watched[arch] = run_trace(engine, PROMPT, Settings(max_new_tokens=STEPS, ignore_eos=True, attention=True,
                                                            logit_lens=True))
    return watched[arch]


@pytest.mark.numerics
@pytest.mark.parametrize("arch", ARCHS)
def test_watched_greedy_tokens_equal_generate(arch, tiny_engine, tiny_model, watched):
    trace = watched_run(arch, tiny_engine, watched)
    ids = [t.id for t in trace.prompt.tokens]
    ours, theirs = [s.id for s in trace.steps], reference_tokens(tiny_model(arch), ids, STEPS)
    gaps = numerics.margins(trace.steps)
    numerics.assert_same_greedy(ours, theirs, gaps)


@pytest.mark.parametrize("arch", ARCHS)
def test_attention_rows_sum_to_one(arch, tiny_engine, watched):
    trace = watched_run(arch, tiny_engine, watched)
    engine = tiny_engine(arch)
    n = len(trace.prompt.tokens)
    assert len(trace.attention.steps) == STEPS
    for k, packed in enumerate(trace.attention.steps):
        rows = packed.unpack()                                         # [layers, heads, keys]
        assert rows.shape == (engine.info.layers, engine.info.heads, n + k), (k, rows.shape)
        assert np.allclose(rows.sum(-1), 1.0, atol=2e-3), k
    for layer in trace.attention.prefill:
        maps = layer.unpack()
        assert np.allclose(maps.sum(-1), 1.0, atol=2e-3)


@pytest.mark.parametrize("arch", ARCHS)
def test_lens_is_shown_on_view(arch, tiny_engine, watched):
    trace = watched_run(arch, tiny_engine, watched)
    engine = tiny_engine(arch)
    lenses = steps_lens(engine, trace.steps)
    assert all(lens is not None and len(lens) == engine.info.layers for lens in lenses)
    assert all(0.0 < g.p <= 1.0 for lens in lenses for g in lens)
    # the last layer's guess is the model's own top token
    assert [lens[-1].id for lens in lenses] == [s.candidates[0].id for s in trace.steps]
