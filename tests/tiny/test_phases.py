"""The engine's phases on every tiny architecture: the lens reads the model's own final norm and head,
the KV cache's measured bytes follow the per-layer-type formula, a fork reuses (or, past a sliding
window, rebuilds) its prefix and continues as `model.generate` would."""

import pytest
import torch

from engine import Settings, run_trace
from engine.matrix.measure import reference_tokens
from engine.matrix.tiny import WINDOW
from engine.model.hooks import decoder_layers
from engine.model.lens import top_guesses
from engine.run.fork import run_fork
from tests import numerics
from tests.tiny.models import ARCHS, SLIDING_ARCHS

PROMPT = "Once upon a time, in a small town by the sea, there lived"
STEPS = 8


@pytest.fixture(scope="module")
def plain_runs():
    return {}


def plain_run(arch, tiny_engine, plain_runs):
    if arch not in plain_runs:
        plain_runs[arch] = run_trace(tiny_engine(arch), PROMPT, Settings(max_new_tokens=STEPS, ignore_eos=True),
                                     keep_cache=True)
    return plain_runs[arch]


@pytest.mark.numerics
@pytest.mark.parametrize("arch", ARCHS)
def test_lens_projection_of_the_last_block_is_the_models_own_output(arch, tiny_engine):
    """The lens skips the last block (its guess is the model's own); projected anyway through the
    final norm found by structure, the head and the model's own logit transforms, it must give the
    model's top token and its probability."""
    engine = tiny_engine(arch)
    ids = torch.tensor([engine.encode(PROMPT, templated=False)])
    kept = {}
    handle = decoder_layers(engine.model)[-1].register_forward_hook(
        lambda _m, _a, out: kept.__setitem__("h", (out[0] if isinstance(out, tuple) else out)[0, -1]))
    try:
        with torch.inference_mode():
            logits = engine.model(input_ids=ids, use_cache=False).logits[0, -1].float()
    finally:
        handle.remove()
    with torch.inference_mode():
        top, p = top_guesses(engine, kept["h"][None])
    best = logits.topk(2).values                 # the model's own top two: a tie may go either way
    own, gaps = [int(logits.argmax())], [float(best[0] - best[1])]
    numerics.assert_same_tops(top, own, gaps)
    want = float(torch.softmax(logits, -1).max())
    assert numerics.close(float(p[0]), want, 1), numerics.worst(float(p[0]), want)


@pytest.mark.parametrize("arch", ARCHS)
def test_kv_bytes_follow_the_formula_of_each_layer_type(arch, tiny_engine, plain_runs):
    trace = plain_run(arch, tiny_engine, plain_runs)
    info = trace.model
    assert (info.sliding_layers is not None) == (arch in SLIDING_ARCHS)
    if info.sliding_layers:
        assert info.sliding_window == WINDOW and info.kv_window_held == WINDOW - 1
        assert trace.steps[-1].kv_tokens > WINDOW         # the prompt already passes the window
    for step in trace.steps:
        assert step.kv_bytes == info.kv_bytes(step.kv_tokens), step.index
    full = info.layers * info.kv_bytes(1) // info.layers * trace.steps[-1].kv_tokens
    assert (trace.steps[-1].kv_bytes < full) == (arch in SLIDING_ARCHS)



@pytest.mark.numerics
@pytest.mark.parametrize("arch", ARCHS)
def test_fork_reuses_its_prefix_and_continues_as_generate(arch, tiny_engine, tiny_model, plain_runs):
    engine = tiny_engine(arch)
    trace = plain_run(arch, tiny_engine, plain_runs)
    prompt = [t.id for t in trace.prompt.tokens]
    for at in (STEPS - 1, 2):
        token = trace.steps[at].candidates[1].id
        forked = run_fork(engine, trace, at, token, max_new_tokens=4)
        branch = forked.branches[-1]
        assert branch.reused_tokens == len(prompt) + at
        # the kept cache holds the newest window at the last step; earlier, a sliding layer has lost it
        rebuilt = at != STEPS - 1 and arch in SLIDING_ARCHS
        assert (branch.rebuilt_ms is not None) == rebuilt, (at, branch.rebuilt_ms)
        ids = prompt + [s.id for s in trace.steps[:at]] + [token]
        got, want, gaps = [s.id for s in branch.steps[1:]], reference_tokens(tiny_model(arch), ids, 4), \
            numerics.margins(branch.steps[1:])
        assert numerics.same_greedy(got, want, gaps), (at, numerics.parted(got, want, gaps))
        trace = forked
