"""The profile of a real run (engine/profile): every op timed, the ops adding up to the pass, and the
command that prints it."""

import json

import pytest

from engine import Settings, run_trace
from engine.errors import InvalidRequest
from engine.profile.ops import LLAMA_OPS
from engine.profile.run import profile_trace
from tests.cli import run_here

@pytest.fixture(scope="module")
def profiled(engine):
    trace = run_trace(engine, "Explain in two sentences why the sky is blue.", Settings(max_new_tokens=8))
    return trace, profile_trace(engine, trace, step=5, repeats=3)


def test_every_op_of_every_layer_is_timed(engine, profiled):
    trace, profile = profiled
    layers = engine.info.layers
    for name, p in profile["phases"].items():
        ops = [(r["layer"], r["op"]) for r in p["rows"] if r["layer"] is not None]
        assert sorted(ops) == sorted((i, op) for i in range(layers) for op in LLAMA_OPS), name
        assert all(r["measured_ms"] is not None and r["measured_ms"] > -0.05 for r in p["rows"]), name
        assert p["tokens"] == (len(trace.prompt.tokens) if name == "prefill" else 1)
    assert profile["phases"]["decode"]["keys"] == len(trace.prompt.tokens) + 5
    assert profile["decode_step"] == 5 and profile["machine"]["bandwidth_bytes_s"] > 0


def test_the_ops_add_up_to_the_pass(profiled):
    _, profile = profiled
    for name, p in profile["phases"].items():
        # the ops shown are one pass's (the median one): they add up to it exactly
        assert p["ops_sum_ms"] == pytest.approx(p["hooked_ms"], rel=1e-9), name
        assert p["hooked_ms"] in p["hooked_runs"], name
        # the timers' cost is stated, not hidden: the hooked pass less the plain one (how large it is is a
        # timing, and a busy host moves it: it is for the bench, not a test)
        assert p["overhead_ms"] == pytest.approx(p["hooked_ms"] - p["forward_ms"]), name
        # that the named ops hold the time and "other" (masks, cache bookkeeping) only the rest is
        # test_time_inside_an_op_is_charged_to_that_op (a share of a timing is the bench's)


def test_a_step_outside_the_run_is_refused(engine, profiled):
    trace, _ = profiled
    for step in (0, len(trace.steps)):
        with pytest.raises(InvalidRequest) as refused:
            profile_trace(engine, trace, step=step, repeats=1)
        assert refused.value.key == "profile_step"


def test_the_command_prints_the_profile(engine, monkeypatch, capsys):
    """`python -m engine profile`, in this process on the session's engine (tests/cli.py)."""
    done = run_here(engine, monkeypatch, capsys, "profile", "--json", "--max-new-tokens", "4", "--repeats", "1",
                    "--project")
    assert done.returncode == 0, done.stderr[-2000:]
    profile = json.loads(done.stdout)
    decode = {o["op"]: o for o in profile["phases"]["decode"]["ops"]}
    assert decode["lm_head"]["bound"] == "memory" and decode["lm_head"]["measured_ms"] > 0
    assert {"predicted_ms", "flops", "bytes", "ratio"} <= set(decode["q_proj"])
    assert {r["hardware"] for r in profile["projection"]} >= {"H100 SXM", "H200 SXM"}


def test_the_profile_keeps_what_its_text_explains_the_gaps_with(profiled):
    """The warm-up pass, the run's own pass times and the replay's load (viz/text/profile_gaps.py)."""
    from viz.text.profile_gaps import gaps_md
    trace, result = profiled
    assert result["run_ms"] == {"prefill": trace.prefill.ms, "decode": trace.steps[5].forward_ms}
    for phase in ("prefill", "decode"):
        assert result["phases"][phase]["warmup_ms"] > 0
    assert result["load"] is None or 0 <= result["load"]["others"] <= 1
    said = gaps_md(json.loads(json.dumps(result, default=str)), "en")
    assert said.startswith("Prefill: ") and "The run's own pass, on the cards" in said, said


JUMP_MS = 1_000_000.0           # 1000 s on the profile's timers: no pass of a 135M model comes near


def test_time_inside_an_op_is_charged_to_that_op(engine, monkeypatch):
    """The timers put time where it was spent: a known delay inside layer 0's activation (a clock jump
    of the profile's timers, engine/profile/measure.py, at its call) lands in layer 0's act_mul row,
    and in no other op's, nor in "other" (the pass less its timed modules)."""
    import time
    from types import SimpleNamespace

    from engine.profile import measure
    trace = run_trace(engine, "Name a colour.", Settings(max_new_tokens=3, ignore_eos=True))
    offset = [0]
    monkeypatch.setattr(measure, "time", SimpleNamespace(perf_counter_ns=lambda: time.perf_counter_ns() + offset[0]))
    layers = engine.model.model.layers
    assert layers[0].mlp.act_fn is not layers[1].mlp.act_fn       # one module per layer

    def jump(module, args) -> None:
        offset[0] += int(JUMP_MS * 1e6)
    hook = layers[0].mlp.act_fn.register_forward_pre_hook(jump)
    try:
        profile = profile_trace(engine, trace, step=1, repeats=1)
    finally:
        hook.remove()
    for name, p in profile["phases"].items():
        rows = {(r["layer"], r["op"]): r["measured_ms"] for r in p["rows"] if r["measured_ms"] is not None}
        assert rows[(0, "act_mul")] >= JUMP_MS, name
        assert all(ms < JUMP_MS for key, ms in rows.items() if key != (0, "act_mul")), name
        assert next(o["measured_ms"] for o in p["ops"] if o["op"] == "other") < JUMP_MS, name
