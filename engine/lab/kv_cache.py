"""Experiment 1: the KV cache on vs off, the same greedy decoding loop with and without it.

With the cache, each decode step feeds one new token and reads the keys and values of all earlier
tokens from memory. Without it, each step feeds the whole sequence again and recomputes them, so
the step time grows with the sequence. Same prompt, greedy, the same N tokens: the ids must match.

Only forward passes are timed (measure.greedy_timing): the prompt is templated and tokenized
before, and both arms run the shared model with plain SDPA attention, switched to before the clock
starts and put back after, while the engine is held exclusively so no visitor's run shares the time.
"""

from __future__ import annotations

import statistics
import threading

from engine.model.core import Engine
from engine.schema.trace import Settings
from engine.lab.measure import Steps, Stopped, attention, greedy_timing, medians, spread

PROMPT = "Explain in two sentences why the sky is blue."
# quick runs repeat 3 times too: the median of 3 is one that a single slow moment cannot move
SIZES = {False: {"new_tokens": 48, "repeats": 3}, True: {"new_tokens": 8, "repeats": 3}}
MODES = (("cache_on", True), ("cache_off", False))
KERNEL = "sdpa"
HELD_FOR = "kv_cache"   # the experiment's name: the page says it in its own language


def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None,
        new_tokens: int | None = None, repeats: int | None = None, prompt: str = PROMPT) -> dict:
    n = new_tokens or SIZES[quick]["new_tokens"]
    repeats = repeats or SIZES[quick]["repeats"]
    ids = engine.encode(engine.apply_template(prompt, Settings()), templated=True)
    steps = Steps(progress, cancel, total=2 + 2 * repeats)
    runs: dict[str, list[dict]] = {name: [] for name, _ in MODES}
    partial = False
    try:
        with engine.exclusive(HELD_FOR), attention(engine.model, KERNEL):
            for name, use_cache in MODES:              # warm-up: first calls pay one-off costs
                steps.tick(f"warm-up, {name.replace('_', ' ')}")
                greedy_timing(engine.model, ids, 2, use_cache)
            for r in range(repeats):                   # interleaved: on, off, on, off ...
                for name, use_cache in MODES:
                    steps.tick(f"{name.replace('_', ' ')}, run {r + 1} of {repeats}")
                    runs[name].append(greedy_timing(engine.model, ids, n, use_cache, cancel))
    except Stopped:
        partial = True
    return summarize(engine, runs, prompt, len(ids), n, repeats, partial)


def summarize(engine: Engine, runs: dict[str, list[dict]], prompt: str, prompt_tokens: int, n: int,
              repeats: int, partial: bool) -> dict:
    modes = {name: _mode(engine, rs) for name, rs in runs.items() if rs}
    on, off = modes.get("cache_on"), modes.get("cache_off")
    speedup = (off["e2e_ms"] / on["e2e_ms"]) if on and off else None
    pairs = [_total(a) / _total(b) for a, b in zip(runs["cache_off"], runs["cache_on"])]
    return {
        "prompt": prompt, "prompt_tokens": prompt_tokens,
        "new_tokens": n, "repeats": repeats, "warmup_runs": 1, "partial": partial,
        "runs": modes,
        # e2e with the cache off ÷ e2e with it on (medians); e2e = the sum of the run's forward passes
        "speedup": speedup,
        "speedup_spread": spread(pairs) if pairs else None,   # off ÷ on, run by run
        "identical_tokens": (on["tokens"] == off["tokens"]) if on and off else None,
        "attn_implementation": KERNEL, "exclusive": True,
        "note": "timed: forward passes only (prefill + one per new token), greedy, "
                "the engine held exclusively; e2e_ms is their sum",
    }


def _total(run: dict) -> float:
    return run["ttft_ms"] + sum(run["step_ms"])


def _mode(engine: Engine, runs: list[dict]) -> dict:
    """Per-step medians over the repeats (step 0 is the first token: the prefill pass)."""
    steps = list(zip(*[[r["ttft_ms"], *r["step_ms"]] for r in runs]))
    tokens = runs[0]["tokens"]
    n = len(tokens)
    return {
        "tokens": tokens,
        "text": engine.tokenizer.decode(tokens),
        "same_tokens_every_run": all(r["tokens"] == tokens for r in runs),
        "step_ms": [statistics.median(v) for v in steps],
        "step_ms_min": [min(v) for v in steps],
        "step_ms_max": [max(v) for v in steps],
        "forward_ms": [statistics.median(v) for v in steps],    # every timed step is one forward pass
        "kv_tokens": runs[0]["kv_tokens"],
        **medians(e2e_ms=[_total(r) for r in runs],
                  ttft_ms=[r["ttft_ms"] for r in runs],
                  tpot_ms=[sum(r["step_ms"]) / len(r["step_ms"]) for r in runs if r["step_ms"]],
                  tokens_per_s=[n / _total(r) * 1000 for r in runs]),
        "runs_measured": len(runs),
    }
