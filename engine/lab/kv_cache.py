"""Experiment 1: the KV cache on vs off, through the engine's own generation loop.

With the cache, each decode step feeds one new token and reads the keys and values of all earlier
tokens from memory. Without it, each step feeds the whole sequence again and recomputes them, so
the step time grows with the sequence. Same prompt, greedy, the same N tokens: the ids must match.
"""

from __future__ import annotations

import statistics
import threading

from ..core import Engine
from ..generate import run_trace
from ..trace import Settings
from .measure import Steps, Stopped, medians, spread

PROMPT = "Explain in two sentences why the sky is blue."
SIZES = {False: {"new_tokens": 48, "repeats": 3}, True: {"new_tokens": 8, "repeats": 2}}
MODES = (("cache_on", True), ("cache_off", False))


def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None,
        new_tokens: int | None = None, repeats: int | None = None, prompt: str = PROMPT) -> dict:
    n = new_tokens or SIZES[quick]["new_tokens"]
    repeats = repeats or SIZES[quick]["repeats"]
    steps = Steps(progress, cancel, total=2 + 2 * repeats)
    traces: dict[str, list] = {name: [] for name, _ in MODES}
    partial = False
    try:
        for name, use_cache in MODES:              # warm-up: first calls pay one-off costs
            steps.tick(f"warm-up, {name.replace('_', ' ')}")
            run_trace(engine, prompt, Settings(max_new_tokens=2, ignore_eos=True, use_cache=use_cache))
        for r in range(repeats):                   # interleaved: on, off, on, off ...
            for name, use_cache in MODES:
                steps.tick(f"{name.replace('_', ' ')}, run {r + 1} of {repeats}")
                trace = run_trace(engine, prompt, Settings(max_new_tokens=n, ignore_eos=True,
                                                           use_cache=use_cache), cancel=cancel)
                if trace.summary.stop_reason == "cancelled":
                    raise Stopped
                traces[name].append(trace)
    except Stopped:
        partial = True
    return summarize(traces, n, repeats, partial)


def summarize(traces: dict[str, list], n: int, repeats: int, partial: bool) -> dict:
    runs = {name: _mode(ts) for name, ts in traces.items() if ts}
    on, off = runs.get("cache_on"), runs.get("cache_off")
    speedup = (off["e2e_ms"] / on["e2e_ms"]) if on and off else None
    pairs = [a.summary.e2e_ms / b.summary.e2e_ms for a, b in zip(traces["cache_off"], traces["cache_on"])]
    first = next((ts[0] for ts in traces.values() if ts), None)
    return {
        "prompt": PROMPT, "prompt_tokens": first.prefill.tokens if first else None,
        "new_tokens": n, "repeats": repeats, "warmup_runs": 1, "partial": partial,
        "runs": runs,
        # e2e with the cache off ÷ e2e with it on (medians); e2e = request start -> last token
        "speedup": speedup,
        "speedup_spread": spread(pairs) if pairs else None,   # off ÷ on, run by run
        "identical_tokens": (on["tokens"] == off["tokens"]) if on and off else None,
        "attn_implementation": first.model.attn_implementation if first else None,
    }


def _mode(traces: list) -> dict:
    """Per-step medians over the repeats (step 0 is the first token, which includes prefill)."""
    steps = list(zip(*[[s.ms for s in t.steps] for t in traces]))
    forward = list(zip(*[[s.forward_ms for s in t.steps] for t in traces]))
    tokens = [s.id for s in traces[0].steps]
    return {
        "tokens": tokens,
        "text": traces[0].output_text,
        "same_tokens_every_run": all([s.id for s in t.steps] == tokens for t in traces),
        "step_ms": [statistics.median(v) for v in steps],
        "step_ms_min": [min(v) for v in steps],
        "step_ms_max": [max(v) for v in steps],
        "forward_ms": [statistics.median(v) for v in forward],
        "kv_tokens": [s.kv_tokens for s in traces[0].steps],
        **medians(e2e_ms=[t.summary.e2e_ms for t in traces],
                  ttft_ms=[t.summary.ttft_ms for t in traces],
                  tpot_ms=[t.summary.tpot_ms for t in traces if t.summary.tpot_ms is not None],
                  tokens_per_s=[t.summary.tokens_per_s for t in traces]),
        "runs_measured": len(traces),
    }
