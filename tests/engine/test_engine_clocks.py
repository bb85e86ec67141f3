"""Honest clocks: the model's own time, the cost of watching and the time spent waiting are kept
apart, and nothing of one step is charged to another."""

import json
import time

import numpy as np
import pytest

from engine import Engine, Settings, Trace, run_trace, stream_trace
from engine.schema.packed import SCALE as PACK_SCALE
from engine.run.side_by_side import interleave
from engine.schema.trace import SCHEMA
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


def test_a_paused_reader_is_waiting_not_model_time(engine):
    """The page pauses the generator between steps: that pause lands in wait_ms of the next step,
    never in its model time (which TPOT is made of)."""
    events = stream_trace(engine, PROMPT, Settings(max_new_tokens=6, ignore_eos=True))
    pause_s = 1.5        # long next to a step, even on a busy machine
    for event in events:
        if event.kind == "step" and len(event.trace.steps) == 3:
            time.sleep(pause_s)
    trace = event.trace
    paused = trace.steps[3]
    assert paused.wait_ms >= pause_s * 1000 * 0.95
    assert paused.ms < pause_s * 1000 / 2
    assert trace.summary.wall_ms > trace.summary.e2e_ms + pause_s * 1000 * 0.95


def test_side_by_side_reports_each_modes_own_time(engine):
    """Stepped in turn, each run's clock leaves the other run's passes out: the reasoning run's
    time to first answer is not inflated by the normal run's work."""
    for normal, reasoning, _ in interleave(engine, "What is 3 + 4?", 16, 16):
        pass
    for trace in (normal, reasoning):
        own = sum(st.ms for st in trace.steps)
        assert trace.summary.e2e_ms == pytest.approx(own, abs=0.05)
        # the other run's passes (about as long as this run's own steps) were waited for
        assert trace.summary.wait_ms > 0.3 * sum(st.ms for st in trace.steps[1:])
    first_answer = next(st for st in reasoning.steps if st.phase == "answer" and not st.forced)
    assert reasoning.summary.time_to_first_answer_ms == first_answer.t_ms
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


@pytest.mark.slow
def test_a_model_that_keeps_eager_attention_is_watched_through_hooks(engine):
    """The fallback path: a model not on SDPA keeps its kernel; watched passes read eager weights
    through hooks, and the trace says so. Its rows equal the main engine's captured rows."""
    eager = Engine.load(attn_implementation="eager")
    assert eager.capture_via == "eager-hooks"
    settings = Settings(max_new_tokens=4, attention=True)
    theirs = run_trace(eager, PROMPT, settings)
    ours = run_trace(engine, PROMPT, settings)
    assert theirs.observation.kernel == "eager" and theirs.observation.attention == "eager-hooks"
    assert [s.id for s in theirs.steps] == [s.id for s in ours.steps]
    packing = 2.5 / PACK_SCALE      # two 12-bit packings of equal rows differ by at most ~2 steps
    for a, b in zip(theirs.attention.steps + theirs.attention.prefill, ours.attention.steps + ours.attention.prefill):
        assert np.abs(a.unpack() - b.unpack()).max() < packing
