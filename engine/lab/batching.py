"""Experiments 5 and 6: why servers batch, and why speculation pays.

`batching` (the batching frontier): B requests decode together, one step feeding B new tokens.
A decode step reads every weight once whatever B is, so while memory bandwidth limits the step, B
requests cost about what one costs; once the arithmetic (2 × parameters × B FLOPs per step)
outgrows the machine's FLOP/s, the step time grows with B. Equal prompts, so no padding is needed.
Per batch size: the decode step time, total tokens/s, the per-request TPOT, and the roofline's
lower bound for that step from this machine's measured bandwidth and FLOP/s (engine/lab/roofline).

`verify` (the price of verifying k tokens): on a warm cache, one forward pass over k new tokens,
for k = 1 … 16. Speculative decoding drafts k tokens cheaply and checks them in one such pass; the
flat part of this curve is the pass it saves.

Only forward passes are timed, inside engine.exclusive(), with SDPA switched in before the clock;
warm-up first, repeats interleaved across sizes, medians with their spread.
"""

from __future__ import annotations

import statistics
from copy import deepcopy
import threading

import torch
from transformers import DynamicCache

from engine.model.core import Engine
from engine.schema.trace import Settings
from engine.lab.measure import Steps, Stopped, attention, spread, timed_ms
from engine.lab.roofline import this_machine

PROMPT = "Explain in two sentences why the sky is blue."
KERNEL = "sdpa"
GROWS = 1.25       # step time this many times batch 1's: where the step starts to grow
SIZES = {False: {"batches": (1, 2, 4, 8, 16, 32), "steps": 12, "repeats": 3, "ks": (1, 2, 4, 8, 16)},
         True: {"batches": (1, 2, 4), "steps": 3, "repeats": 2, "ks": (1, 4)}}


def _prompt_ids(engine: Engine) -> list[int]:
    return engine.encode(engine.apply_template(PROMPT, Settings()), templated=True)


def _decode_steps(model, ids: list[int], batch: int, steps: int) -> list[float]:
    """Prefill `batch` copies of the prompt, then time `steps` greedy decode passes of [batch, 1]."""
    device = model.device
    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids] * batch, device=device), cache=cache, use_cache=True,
                       logits_to_keep=1).logits
        fed = logits[:, -1].argmax(-1, keepdim=True)
        times = []
        for _ in range(steps):
            ms, logits = timed_ms(lambda: model(input_ids=fed, cache=cache, use_cache=True,
                                                logits_to_keep=1).logits, device)
            times.append(ms)
            fed = logits[:, -1].argmax(-1, keepdim=True)          # off the clock
    return times


def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None) -> dict:
    size = SIZES[quick]
    ids, batches = _prompt_ids(engine), size["batches"]
    steps = Steps(progress, cancel, total=1 + len(batches) * (size["repeats"] + 1))
    runs: dict[int, list[float]] = {b: [] for b in batches}
    partial, machine = False, None
    try:
        with engine.exclusive("batching"), attention(engine.model, KERNEL):
            steps.tick("this machine's bandwidth and FLOP/s")
            machine = this_machine(engine)      # the roofline's figures, one per host
            for b in batches:                                   # warm-up: one-off costs of each shape
                steps.tick(f"warm-up, batch {b}")
                _decode_steps(engine.model, ids, b, 2)
            for r in range(size["repeats"]):                    # interleaved: 1, 2, 4 ... 1, 2, 4 ...
                for b in batches:
                    steps.tick(f"batch {b}, run {r + 1} of {size['repeats']}")
                    runs[b].append(statistics.median(_decode_steps(engine.model, ids, b, size["steps"])))
    except Stopped:
        partial = True
    return summarize(engine, runs, machine, len(ids), size, partial)


def summarize(engine: Engine, runs: dict[int, list[float]], machine: dict | None, prompt_tokens: int,
              size: dict, partial: bool) -> dict:
    info = engine.info
    context = prompt_tokens + size["steps"]
    rows = []
    for b, ms in runs.items():
        if not ms:
            continue
        step = statistics.median(ms)
        flops = 2 * info.parameters * b
        kv = info.kv_bytes(context) * b
        moved = info.parameter_bytes + kv
        row = {"batch": b, "step_ms": spread(ms), "tokens_per_s": b / step * 1000, "tpot_ms": step,
               "flops": flops, "bytes": moved, "intensity": flops / moved}
        if machine:
            row["bandwidth_bound_ms"] = moved / machine["bandwidth_bytes_s"] * 1000
            row["compute_bound_ms"] = flops / machine["peak_flops"] * 1000
            row["bound_ms"] = max(row["bandwidth_bound_ms"], row["compute_bound_ms"])
        rows.append(row)
    base = rows[0]["tokens_per_s"] if rows and rows[0]["batch"] == 1 else None
    for row in rows:
        row["speedup"] = row["tokens_per_s"] / base if base else None
    first = rows[0]["tpot_ms"] if rows else None
    grows = next((r["batch"] for r in rows if first and r["tpot_ms"] >= GROWS * first), None)
    ridge = None
    if machine:          # the batch where the compute bound overtakes the bandwidth bound
        ridge = next((r["batch"] for r in rows if r["compute_bound_ms"] >= r["bandwidth_bound_ms"]), None)
    at8 = next((r["speedup"] for r in rows if r["batch"] == 8), None)
    return {"prompt": PROMPT, "prompt_tokens": prompt_tokens, "decode_steps": size["steps"],
            "repeats": size["repeats"], "warmup_runs": 1, "partial": partial, "rows": rows,
            "machine": machine, "grows_from_batch": grows, "grows_threshold": GROWS,
            "compute_bound_from_batch": ridge, "speedup_at_8": at8,
            "attn_implementation": KERNEL, "exclusive": True,
            "note": "timed: decode forward passes only ([batch, 1] after a prefill of equal prompts), greedy, "
                    "the engine held exclusively; step_ms is the median over steps of each run, then over runs"}


def verify(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None) -> dict:
    """One forward pass over k new tokens on a warm cache, for each k; each pass runs on a copy of the
    prompt's cache made off the clock (a sliding-window layer's cache cannot be cut back), so every pass
    sees the same prefix."""
    size = SIZES[quick]
    model, ids, ks = engine.model, _prompt_ids(engine), size["ks"]
    steps = Steps(progress, cancel, total=2 + len(ks) * size["repeats"])
    runs: dict[int, list[float]] = {k: [] for k in ks}
    partial = False
    try:
        with engine.exclusive("verify"), attention(model, KERNEL), torch.inference_mode():
            steps.tick("prefill and draft tokens")
            base = DynamicCache(config=model.config)
            model(input_ids=torch.tensor([ids], device=model.device), cache=base, use_cache=True, logits_to_keep=1)
            # the tokens a drafter would propose: the prompt's own last tokens (their values do not
            # change the cost of a pass)
            draft = torch.tensor([(ids * 4)[-max(ks):]], device=model.device)

            def one_pass(k: int) -> float:
                cache = deepcopy(base)                            # the prompt's cache, off the clock
                ms, _ = timed_ms(lambda: model(input_ids=draft[:, :k], cache=cache, use_cache=True,
                                               logits_to_keep=k).logits, model.device)
                return ms
            steps.tick("warm-up")
            for k in ks:
                one_pass(k)
            for r in range(size["repeats"]):
                for k in ks:
                    steps.tick(f"k = {k}, run {r + 1} of {size['repeats']}")
                    runs[k].append(one_pass(k))
    except Stopped:
        partial = True
    one = statistics.median(runs[ks[0]]) if runs[ks[0]] else None
    rows = [{"k": k, "ms": spread(ms), "ms_per_token": statistics.median(ms) / k,
             "vs_one": statistics.median(ms) / one if one else None} for k, ms in runs.items() if ms]
    return {"prompt_tokens": len(ids), "repeats": size["repeats"], "warmup_runs": 1, "partial": partial,
            "rows": rows, "attn_implementation": KERNEL, "exclusive": True,
            "note": "timed: one forward pass of k tokens on a copy of a cache holding the prompt (copied off the clock)"}
