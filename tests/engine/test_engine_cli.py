"""The command line: `python -m engine trace` in a subprocess, as a newcomer runs it (the entry point
itself); the other commands in this process on the session's engine (tests/cli.py: each child loaded
the model again)."""

import json
import subprocess
import sys

import pytest

from engine import Trace
from tests.cli import run_here
from tests.paths import ROOT



def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_trace_command_writes_a_trace(tmp_path):
    out = tmp_path / "t.json"
    done = run_cli("trace", "--prompt", "什么是量子计算", "--max-new-tokens", "5", "--attention",
                   "--logit-lens", "--temperature", "0.7", "--seed", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    trace = Trace.from_json(out.read_text())
    assert trace.settings.temperature == 0.7 and trace.settings.seed == 3
    assert len(trace.steps) == trace.summary.new_tokens <= 5
    assert trace.attention is not None and trace.steps[0].lens is not None
    assert "TTFT" in done.stderr


def test_trace_command_reports_bad_input_cleanly(tmp_path, engine, monkeypatch, capsys):
    done = run_here(engine, monkeypatch, capsys, "trace", "--prompt", "  ", "--out", str(tmp_path / "x.json"))
    assert done.returncode == 2
    assert "error: the prompt is empty" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_bench_command_prints_the_figures(engine, monkeypatch, capsys):
    # the compiled figures: tests/tiny/test_fast.py
    done = run_here(engine, monkeypatch, capsys, "bench", "--json", "--new-tokens", "6", "--repeats", "1", "--no-fast")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for key in ("hf_generate_tok_s", "engine_tok_s", "engine_wall_tok_s", "engine_attention_tok_s",
                "app_default_tok_s", "overhead_ratio", "app_default_ratio", "observe_ms_per_step",
                "compare_tpot_ratio", "ttft_ms", "tpot_ms", "read_bandwidth_gbs", "weight_bytes",
                "limit_tpot_ms", "peak_rss_mb", "trace_json_bytes", "decode_tok_s", "llamacpp_decode_tok_s",
                "decode_vs_llamacpp"):
        assert result[key] > 0, key
    # llama.cpp on the same GGUF (installed by make test), timed like our decode
    assert result["llamacpp"]["new_tokens"] == 6 and result["decode_vs_llamacpp"] == pytest.approx(
        result["decode_tok_s"] / result["llamacpp_decode_tok_s"])
    # one repeat: each ratio is that round's ratio of the medians shown
    assert result["overhead_ratio"] == pytest.approx(result["engine_wall_tok_s"] / result["hf_generate_tok_s"])
    assert result["app_default_ratio"] == pytest.approx(result["app_default_tok_s"] / result["hf_generate_tok_s"])
    # the model's own clock leaves watching and waiting out, so it is never slower than the wall
    assert result["engine_tok_s"] >= result["engine_wall_tok_s"]


@pytest.mark.numerics
def test_floor_command_serves_a_workload_and_a_forked_trace(tmp_path, engine, monkeypatch, capsys):
    """`python -m engine floor`: the figures as JSON, the file written; `--branches` serves a forked
    trace's lineages; a bad setting is one line on stderr."""
    from engine.run.fork import run_fork
    from engine.run.generate import run_trace
    from engine.schema.floor_check import read_floor
    from engine.schema.trace import Settings
    out = tmp_path / "floor.json"
    done = run_here(engine, monkeypatch, capsys, "floor", "--requests", "3", "--rate", "0", "--prompt-tokens", "48",
                    "--shared-prefix", "16", "--new-tokens", "3", "--page-size", "8", "--blocks", "64", "--json",
                    "--out", str(out))
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["tokens_equal_generate"] == 3 and figures["settings"]["arrival"] == "burst"
    assert len(read_floor(out.read_text()).lanes) == 3
    trace = run_trace(engine, "Name a planet with rings.", Settings(max_new_tokens=5))
    forked = run_fork(engine, trace, 2, trace.steps[2].candidates[1].id, max_new_tokens=3)
    (tmp_path / "forked.json").write_text(forked.to_json(), encoding="utf-8")
    done = run_here(engine, monkeypatch, capsys, "floor", "--branches", str(tmp_path / "forked.json"), "--new-tokens",
                    "3", "--page-size", "4", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["requests"] == 2
    done = run_here(engine, monkeypatch, capsys, "floor", "--requests", "0")
    assert done.returncode == 2 and "error: requests must be between" in done.stderr and "Traceback" not in done.stderr


def test_fork_command_continues_a_trace_file(tmp_path, engine, monkeypatch, capsys):
    """`python -m engine fork`: a trace file, a step and one of its candidates in; the trace with the
    branch written, and what it measured printed. A new process holds no cache of the run: rebuilt."""
    from engine.run.generate import run_trace
    from engine.run.prefixes import Prefixes
    from engine.schema.trace import Settings
    trace = run_trace(engine, "Name a planet with rings.", Settings(max_new_tokens=5))
    # caches are found by tokens: another test's run of this prompt may have kept one in this process
    monkeypatch.setattr(engine, "prefixes", Prefixes(engine.limits.prefix_cache_bytes))
    (tmp_path / "run.json").write_text(trace.to_json(), encoding="utf-8")
    token = trace.steps[2].candidates[1].id
    done = run_here(engine, monkeypatch, capsys, "fork", "--trace", str(tmp_path / "run.json"), "--step", "2",
                    "--token", str(token), "--max-new-tokens", "3", "--out", str(tmp_path / "forked.json"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["at"], report["token"], report["parent"]) == (2, token, "run") and report["rebuilt_ms"] is not None
    forked = Trace.from_json((tmp_path / "forked.json").read_text(encoding="utf-8"))
    assert forked.branches[-1].id == report["branch"] and forked.branches[-1].recompute_ms is not None
    done = run_here(engine, monkeypatch, capsys, "fork", "--trace", str(tmp_path / "run.json"))
    assert done.returncode == 2 and "fork needs" in done.stderr


def test_eval_command_answers_the_built_in_questions(engine, monkeypatch, capsys):
    done = run_here(engine, monkeypatch, capsys, "eval", "--budgets", "0", "--limit", "1", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["questions"]) == 1 and set(result["questions"][0]["results"]) == {"0"}
    done = run_here(engine, monkeypatch, capsys, "eval", "--budgets", "9999")
    assert done.returncode == 2 and "budgets" in done.stderr


def test_lab_command_runs_the_experiments_it_names(engine, monkeypatch, capsys):
    """`python -m engine lab --only`: the experiments' JSON (what each measures is tests/engine/test_lab.py's)."""
    done = run_here(engine, monkeypatch, capsys, "lab", "--quick", "--only", "roofline", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["experiments"] == ["roofline"] and result["quick"] is True and result["roofline"]["rows"]
    done = run_here(engine, monkeypatch, capsys, "lab", "--only", "warp_drive")
    assert done.returncode == 2 and "unknown experiment" in done.stderr
