"""A real serving engine: llama-cpp-python's OpenAI-compatible server on the embedded GGUF. Its
greedy trace of a prompt must agree with our engine's model (the same weights, dequantised), and
both of its APIs must give the same tokens."""

from __future__ import annotations

import json

import pytest

from engine.served import ServedError, endpoint, stream_served
from engine.served.agreement import agreement
from engine.schema.trace import Settings, Trace
from engine.schema.validate import validate
from tests.cli import run_here

PROMPT = "Explain in two sentences why the sky is blue."
# llama-cpp-python's server applies repeat_penalty 1.1 by default: not plain greedy without this
GREEDY = {"repeat_penalty": 1.0}


def served(url, api="completions", local=None, prompt=PROMPT, max_new_tokens=48, **kwargs) -> Trace:
    where = endpoint(url, "smollm2", api=api, extra=GREEDY, **kwargs)
    events = stream_served(where, prompt, Settings(max_new_tokens=max_new_tokens), local=local)
    try:
        while True:
            next(events)
    except StopIteration as done:
        return validate(done.value)


def test_a_served_greedy_trace_agrees_with_our_engine(llama_server, engine):
    trace = served(llama_server, local=engine)
    assert trace.model.source == "served" and trace.model.layers == engine.info.layers
    assert len(trace.steps) == 48 and trace.summary.stop_reason == "max_tokens"
    assert [t.id for t in trace.prompt.tokens] == engine.encode(trace.prompt.templated, templated=True)
    # the served tokens fed through our model: its first choice at each position, on the same prefix
    result = agreement(engine, trace)
    print("served vs engine:", result)
    assert result["steps"] == 48 and result["top1"] >= 0.9
    for step in trace.steps:           # greedy: the server chose its own top candidate
        assert step.chosen_rank == 0 and step.candidates[0].id == step.id
    s = trace.summary                  # vLLM's benchmark definitions, client side
    assert 0 < s.ttft_ms < s.e2e_ms and s.tpot_ms == pytest.approx((s.e2e_ms - s.ttft_ms) / 47)
    assert trace.served.chunks == 48 and len(trace.served.itl_ms) == 47
    assert sum(trace.served.itl_ms) == pytest.approx(s.e2e_ms - s.ttft_ms, abs=0.01)
    assert json.loads(trace.served.sent) == GREEDY


def test_the_chat_api_gives_the_same_tokens(llama_server, engine):
    """/v1/chat/completions (the server applies the GGUF's chat template) against /v1/completions
    with our template applied here: the same model, the same prompt, the same greedy tokens."""
    chat = served(llama_server, api="chat", local=engine, max_new_tokens=24)
    plain = served(llama_server, local=engine, max_new_tokens=24)
    assert [s.id for s in chat.steps] == [s.id for s in plain.steps]
    assert chat.output_text == plain.output_text and chat.output_text.strip()


def test_without_a_tokenizer_the_server_texts_cannot_become_ids(llama_server):
    with pytest.raises(ServedError, match="no id for token 0"):
        served(llama_server, max_new_tokens=4)


def test_the_cli_writes_a_served_trace(llama_server, tmp_path, engine, monkeypatch, capsys):
    """`python -m engine trace --endpoint`, in this process (tests/cli.py: --tokenizer embedded is the
    session's engine, not a second load)."""
    out = tmp_path / "served.json"
    done = run_here(engine, monkeypatch, capsys, "trace", "--endpoint", llama_server, "--model", "smollm2",
                    "--tokenizer", "embedded", "--extra", json.dumps(GREEDY), "--prompt", PROMPT,
                    "--max-new-tokens", "8", "--out", str(out))
    assert done.returncode == 0, done.stderr
    trace = validate(Trace.from_json(out.read_text()))
    assert len(trace.steps) == 8 and trace.served.model == "smollm2" and "TTFT" in done.stderr
    bad = run_here(engine, monkeypatch, capsys, "trace", "--endpoint", "http://127.0.0.1:9", "--model", "m",
                   "--prompt", PROMPT, "--out", str(out))
    assert bad.returncode == 2 and "cannot reach" in bad.stderr and "Traceback" not in bad.stderr


def test_the_load_sweep_against_a_real_server(llama_server, engine, monkeypatch, capsys):
    from engine.served.load import Slo, load_sweep
    where = endpoint(llama_server, "smollm2", extra=GREEDY)
    result = load_sweep(where, PROMPT, max_tokens=8, levels=(1, 2), rounds=1, slo=Slo(ttft_ms=60_000, tpot_ms=60_000))
    assert [r["concurrency"] for r in result["levels"]] == [1, 2] and result["stopped"] is None
    for row in result["levels"]:
        assert row["requests"] == row["concurrency"] and row["failed"] == 0
        assert 0 < row["ttft_p50_ms"] <= row["ttft_p95_ms"] and row["tpot_p50_ms"] > 0
        assert row["output_tokens"] == 8 * row["concurrency"] and row["throughput_tok_s"] > 0
        assert row["goodput"] == pytest.approx(row["request_rate"])      # generous SLOs: every request met them
    json.dumps(result, allow_nan=False)
    done = run_here(engine, monkeypatch, capsys, "load", "--endpoint", llama_server, "--model", "smollm2",
                    "--levels", "1", "--rounds", "1", "--max-tokens", "4", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["levels"][0]["output_tokens"] == 4
