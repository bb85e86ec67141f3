"""Honest clocks: the model's own time, the cost of watching and the time spent waiting are kept
apart, and nothing of one step is charged to another."""

import json

import numpy as np
import pytest

from engine import Engine, Settings, Trace, run_trace, stream_trace
from engine.run.side_by_side import interleave
from engine.schema.trace import SCHEMA
from tests import numerics
from tests.paths import FIXTURES

PROMPT = "Name three colours of the rainbow."


def test_each_step_splits_its_wall_time_into_model_watching_and_waiting(engine):
    trace = run_trace(engine, PROMPT, Settings(max_new_tokens=12, attention=True, logit_lens=True,
                                               ignore_eos=True))
    s = trace.summary
    total = sum(st.ms + st.observe_ms + st.wait_ms for st in trace.steps)
    assert total == pytest.approx(s.wall_ms, abs=0.05)          # every millisecond is somewhere
    assert s.e2e_ms == trace.steps[-1].t_ms == pytest.approx(sum(st.ms for st in trace.steps), abs=0.05)
    assert s.observe_ms == pytest.approx(sum(st.observe_ms for st in trace.steps), abs=0.05)
    assert all(st.observe_ms > 0 for st in trace.steps)         # the lens and capture cost something
    assert s.tokens_per_s == pytest.approx(s.new_tokens / s.e2e_ms * 1000)


JUMP_MS = 1_000_000.0     # a clock jump no step of a 135M model comes near (1000 s): no threshold on a real time


@pytest.fixture()
def jump_clock(monkeypatch):
    """jump(ms): every clock read of the engine (engine/model/clock.now_ms) moves forward by `ms` from
    now on, as if that much time passed at this instant: a pause of known length, without a sleep."""
    from engine.model import clock
    offset = [0.0]
    monkeypatch.setattr(clock, "_paused_s", lambda: -offset[0] / 1000)

    def jump(ms: float) -> None:
        offset[0] += ms
    return jump


def test_a_paused_reader_is_waiting_not_model_time(engine, jump_clock):
    """The page pauses the generator between steps: that pause lands in wait_ms of the next step,
    never in its model time (which TPOT is made of), nor in any other step."""
    events = stream_trace(engine, PROMPT, Settings(max_new_tokens=6, ignore_eos=True))
    for event in events:
        if event.kind == "step" and len(event.trace.steps) == 3:
            jump_clock(JUMP_MS)                 # the reader holds the generator between steps 2 and 3
    trace = event.trace
    paused = trace.steps[3]
    assert paused.wait_ms >= JUMP_MS
    assert all(st.ms < JUMP_MS and st.observe_ms < JUMP_MS for st in trace.steps)
    assert all(st.wait_ms < JUMP_MS for st in trace.steps if st is not paused)
    assert trace.summary.e2e_ms < JUMP_MS <= trace.summary.wall_ms - trace.summary.e2e_ms
    assert trace.summary.tpot_ms < JUMP_MS / len(trace.steps)


def test_side_by_side_reports_each_modes_own_time(engine, jump_clock, monkeypatch):
    """Stepped in turn, each run's clock leaves the other run's passes out: the reasoning run's
    time to first answer is not inflated by the normal run's work. Here every forward pass of the
    normal run takes JUMP_MS more (by the engine's clock): the reasoning run's model time holds none
    of it, its waiting holds it; the normal run's model time holds it once per pass."""
    from engine.run import generate
    stepping = {"normal": False}
    real = generate.stream_trace

    def marked(engine, prompt, settings, *args, **kwargs):
        normal = settings.thinking_budget == 0
        events = real(engine, prompt, settings, *args, **kwargs)
        while True:
            stepping["normal"] = normal
            try:
                event = next(events)
            except StopIteration:
                return
            finally:
                stepping["normal"] = False
            yield event
    def slow_normal_pass(module, args) -> None:
        if stepping["normal"]:
            jump_clock(JUMP_MS)
    monkeypatch.setattr(generate, "stream_trace", marked)
    hook = engine.model.register_forward_pre_hook(slow_normal_pass)
    try:
        for normal, reasoning, _ in interleave(engine, "What is 3 + 4?", 16, 16):
            pass
    finally:
        hook.remove()
    assert reasoning.settings.thinking_budget > 0 == normal.settings.thinking_budget
    for trace in (normal, reasoning):
        own = sum(st.ms for st in trace.steps)
        assert trace.summary.e2e_ms == pytest.approx(own, abs=0.05)
    # the normal run's passes: in its own steps (one jump each), in the reasoning run's waiting only
    assert all(st.ms >= JUMP_MS for st in normal.steps)
    assert reasoning.summary.e2e_ms < JUMP_MS and all(st.ms < JUMP_MS for st in reasoning.steps)
    assert reasoning.summary.wait_ms >= JUMP_MS * (len(normal.steps) - 1)
    first_answer = next(st for st in reasoning.steps if st.phase == "answer" and not st.forced)
    assert reasoning.summary.time_to_first_answer_ms == first_answer.t_ms < JUMP_MS
    assert first_answer.t_ms == pytest.approx(sum(st.ms for st in reasoning.steps[:first_answer.index + 1]),
                                              abs=0.05)


def test_trace_records_the_kernel_and_what_was_captured(engine):
    trace = run_trace(engine, PROMPT, Settings(max_new_tokens=2, attention=True))
    assert trace.schema == SCHEMA
    assert trace.observation.kernel == engine.info.attn_implementation == "sdpa"
    assert trace.observation.attention == "sdpa-capture" and trace.observation.logit_lens is False
    again = Trace.from_json(trace.to_json())
    assert again.observation == trace.observation


def test_version_1_traces_still_load():
    fixture = FIXTURES / "trace_zh.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    assert data["schema"] == "token-by-token/trace@1"
    trace = Trace.from_json(fixture.read_text(encoding="utf-8"))
    assert trace.observation is None and trace.summary.wall_ms is None
    assert all(st.observe_ms == 0 and st.wait_ms == 0 for st in trace.steps)


@pytest.mark.numerics
def test_a_model_that_keeps_eager_attention_is_watched_through_hooks(engine):
    """The fallback path: a model not on SDPA keeps its kernel; watched passes read eager weights
    through hooks, and the trace says so. Its rows equal the main engine's captured rows. The eager
    model is the session's model copied around the same weight tensors (no second load); loading a
    model that keeps eager attention is tests/tiny's (gemma2)."""
    import copy
    import dataclasses

    from engine.model.loading import LoadedModel
    with engine.lock:
        shared = {id(t): t for t in (*engine.model.parameters(), *engine.model.buffers())}
        model = copy.deepcopy(engine.model, shared)
    model.set_attn_implementation("eager")
    eager = Engine(LoadedModel(model, engine.tokenizer, dataclasses.replace(engine.info, attn_implementation="eager")))
    assert eager.capture_via == "eager-hooks"
    assert all(a.data_ptr() == b.data_ptr() for a, b in zip(eager.model.parameters(), engine.model.parameters()))
    settings = Settings(max_new_tokens=4, attention=True)
    theirs = run_trace(eager, PROMPT, settings)
    ours = run_trace(engine, PROMPT, settings)
    assert theirs.observation.kernel == "eager" and theirs.observation.attention == "eager-hooks"
    got, want, gaps = [s.id for s in theirs.steps], [s.id for s in ours.steps], numerics.margins(ours.steps)
    numerics.assert_same_greedy(got, want, gaps)
    # two 12-bit packings of rows two kernels computed (PACKED_PAIR), over the passes that read the same
    # tokens (all of them unless the runs parted at a tie)
    alike = numerics.fed_alike(got, want)
    assert len(theirs.attention.prefill) == len(ours.attention.prefill) > 0
    for a, b in zip(theirs.attention.steps[:alike] + theirs.attention.prefill,
                    ours.attention.steps[:alike] + ours.attention.prefill):
        assert a.shape == b.shape and np.abs(a.unpack() - b.unpack()).max() <= numerics.PACKED_PAIR
