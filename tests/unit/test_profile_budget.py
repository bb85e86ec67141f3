"""The profile after a run costs no more than the run (issue 52 item 4): an 8B model's long prompt
with a short answer is profiled on demand only; a short run on a small model keeps its 3 repeats."""

import dataclasses

from engine.profile.run import FREE_MS, REPEATS, affordable_repeats, replay_ms
from ui.host import recordings


def run_of(prefill_ms: float, step_ms: float, steps: int):
    """The recording with its clocks set: a prefill, then `steps` decode steps of `step_ms` each."""
    trace = recordings.recorded("en")["next"]
    first = dataclasses.replace(trace.steps[0], ms=prefill_ms + step_ms, forward_ms=step_ms)
    rest = [dataclasses.replace(trace.steps[min(i, len(trace.steps) - 1)], ms=step_ms, forward_ms=step_ms)
            for i in range(1, steps)]
    return dataclasses.replace(trace, prefill=dataclasses.replace(trace.prefill, ms=prefill_ms), steps=[first, *rest])


def test_a_short_run_on_a_small_model_keeps_every_repeat():
    trace = recordings.recorded("en")["next"]
    assert affordable_repeats(trace) == REPEATS
    assert affordable_repeats(run_of(60.0, 40.0, 12)) == REPEATS      # the browser tests' 10-12 token runs


def test_a_slow_pass_gets_fewer_repeats_and_the_replay_stays_within_the_run():
    for prefill, step, steps in ((1000.0, 100.0, 40), (1000.0, 100.0, 100), (4000.0, 300.0, 60)):
        trace = run_of(prefill, step, steps)
        r = affordable_repeats(trace)
        own = sum(s.ms for s in trace.steps)
        assert 1 <= r <= REPEATS and replay_ms(trace, r) <= max(own, FREE_MS)
        assert r == REPEATS or replay_ms(trace, r + 1) > max(own, FREE_MS)     # the most that fits
    assert affordable_repeats(run_of(1000.0, 100.0, 40)) == 1


def test_a_long_prompt_with_a_short_answer_is_left_to_the_button():
    assert affordable_repeats(run_of(10_000.0, 200.0, 4)) == 0
