"""Trace.validate on a trace the real model just made (hostile and recorded files are checked in
tests/unit/test_trace_validate.py)."""

from engine import Trace
from engine.schema.validate import validate


def test_a_fresh_run_passes(engine):
    from engine import Settings, run_trace
    trace = run_trace(engine, "Hi there", Settings(max_new_tokens=4, attention=True, logit_lens=True))
    validate(Trace.from_json(trace.to_json()), engine.limits)
