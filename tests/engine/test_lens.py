"""The logit lens computed off the run's clock equals the lens the loop used to compute in each step
(one step's states, or many steps' batched, against the loop's: two summation orders, tests/numerics.py)."""

import pytest

from engine import Settings, Trace, run_trace
from engine.model import lens as lens_module
from engine.schema.validate import validate
from tests import numerics

PROMPT = "什么是量子计算"


@pytest.fixture(scope="module")
def run_and_reference(engine):
    """A run with the lens on, and the lens the loop would have computed at each of its passes
    (engine.forward wrapped: the same captured states and final logits, projected in the step)."""
    reference = []
    forward = engine.forward

    def forward_and_lens(input_ids, cache, capture):
        out = forward(input_ids, cache, capture)
        if capture.lens:
            reference.append(lens_module.lens_in_loop(engine, capture, out.logits))
        return out

    engine.forward = forward_and_lens
    try:
        trace = run_trace(engine, PROMPT, Settings(max_new_tokens=12, attention=True, logit_lens=True))
    finally:
        del engine.forward            # the class's method again
    return trace, reference, numerics.lens_margins(engine, trace.steps)


def _same(guesses, expected, gaps):
    """The same guess at each layer (or a tie there, taken the other way), its text, its probability."""
    assert [g.layer for g in guesses] == [g.layer for g in expected] == list(range(len(expected)))
    got, want = [g.id for g in guesses], [g.id for g in expected]
    numerics.assert_same_tops(got, want, gaps)
    assert all(g.text == e.text for g, e in zip(guesses, expected) if g.id == e.id)
    p, q = [g.p for g in guesses], [g.p for g in expected]
    assert numerics.close(p, q, 1), numerics.worst(p, q)


def test_the_run_keeps_states_not_the_lens(engine, run_and_reference):
    trace, reference, _ = run_and_reference
    assert len(reference) == len(trace.steps) == 12
    for step in trace.steps:
        assert step.lens is None
        assert step.hidden.shape == [engine.info.layers - 1, engine.info.hidden_size]
    validate(Trace.from_json(trace.to_json()))           # the blocks pass the file checks too


@pytest.mark.numerics
def test_lens_on_view_equals_the_loops(engine, run_and_reference):
    trace, reference, gaps = run_and_reference
    for step, expected, g in zip(trace.steps, reference, gaps):
        _same(lens_module.step_lens(engine, step), expected, g)


@pytest.mark.numerics
def test_export_carries_the_lens_and_drops_the_states(engine, run_and_reference):
    trace, reference, gaps = run_and_reference
    out = lens_module.exported(engine, trace)
    assert all(st.hidden is None for st in out.steps)
    assert all(st.hidden is not None and st.lens is None for st in trace.steps)   # the run's own is untouched
    for step, expected, g in zip(out.steps, reference, gaps):   # batched over steps: the same guesses
        _same(step.lens, expected, g)
    again = validate(Trace.from_json(out.to_json()))           # a downloaded file shows it without a model
    got, want = [g.id for g in again.steps[3].lens], [g.id for g in reference[3]]
    numerics.assert_same_tops(got, want, gaps[3])
    assert len(out.to_json()) < len(trace.to_json()) / 2


def test_a_trace_of_another_model_is_left_alone(engine, run_and_reference):
    import dataclasses
    trace, _, _ = run_and_reference
    other = dataclasses.replace(trace, model=dataclasses.replace(trace.model, id="someone/else"))
    assert not lens_module.usable(engine, other)
    assert lens_module.with_step_lens(engine, other, 0).steps[0].lens is None
    assert all(st.lens is None for st in lens_module.exported(engine, other).steps)


def test_a_run_keeps_states_up_to_the_hosts_cap(engine):
    import dataclasses
    from viz.charts.decode import lens_chart
    per_step = 4 * (engine.info.layers - 1) * engine.info.hidden_size
    before = engine.limits
    engine.limits = dataclasses.replace(before, lens_max_bytes=3 * per_step)   # room for three steps
    try:
        trace = run_trace(engine, PROMPT, Settings(max_new_tokens=6, logit_lens=True, ignore_eos=True))
    finally:
        engine.limits = before
    assert [st.hidden is not None for st in trace.steps] == [True] * 3 + [False] * 3
    assert trace.observation.lens_capped_at == 3
    out = validate(Trace.from_json(lens_module.exported(engine, trace).to_json()))
    assert [st.lens is not None for st in out.steps] == [True] * 3 + [False] * 3
    with pytest.raises(ValueError, match="first 3 steps"):                      # the chart says why
        lens_chart(out, 4, lang="en")
