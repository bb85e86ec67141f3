"""/profile through gradio_client: a /trace result replayed with timers, op by op, beside the roofline;
and /trace's file carries the logit lens computed at export, not the hidden states it came from."""

import pytest
from gradio_client import handle_file

from engine import Trace


@pytest.fixture(scope="module")
def traced(client):
    path = client.predict(prompt="Why is the sky blue?", max_new_tokens=8, logit_lens=True, api_name="/trace")
    with open(path, encoding="utf-8") as f:
        return path, Trace.from_json(f.read())


def test_the_trace_file_carries_the_lens_not_the_states(traced, engine):
    _, trace = traced
    assert all(s.hidden is None for s in trace.steps)
    assert all(s.lens is not None and len(s.lens) == engine.info.layers for s in trace.steps)
    assert all(s.lens[-1].id == s.candidates[0].id for s in trace.steps)   # the last layer: the model's own top


def test_profile_of_a_trace(client, traced):
    path, trace = traced
    profile = client.predict(trace=handle_file(path), step=3, api_name="/profile")
    assert profile["decode_step"] == 3 and profile["run_id"] == trace.run_id
    decode = profile["phases"]["decode"]
    assert decode["tokens"] == 1 and decode["keys"] == len(trace.prompt.tokens) + 3
    ops = {o["op"]: o for o in decode["ops"]}
    assert ops["q_proj"]["measured_ms"] > 0 and ops["q_proj"]["predicted_ms"] > 0 and ops["q_proj"]["bytes"] > 0
    assert ops["watching"]["measured_ms"] == trace.steps[3].observe_ms
    assert any(r["hardware"] == "H200 SXM" for r in profile["projection"])


def test_a_step_outside_the_run_is_refused_in_words(client, traced):
    path, _ = traced
    with pytest.raises(Exception, match="decode step"):
        client.predict(trace=handle_file(path), step=99, api_name="/profile")
