"""The profile of one run: its prefill and one of its decode steps, replayed with timers on each op,
beside the roofline's time for each op on this machine's measured bandwidth and FLOP/s.

The replay is a separate short pass after the run (the run itself is never hooked, so nothing here
touches its clocks): the run's own prompt tokens for the prefill; for decode step K, the prompt and
the first K - 1 generated tokens put in a fresh cache (one pass, not timed), then the step that feeds
token K - 1 and gives token K, timed again and again from a copy of that cache made before each (off the clock: a sliding-window
layer's cache cannot be cropped back). Each
pass holds the engine's lock, its timers registered inside it: another visitor's step can go between
two passes (it waits one pass at most), never inside one. Sampling is timed on the step's own
logits; watching is the run's own `observe_ms` for that step (prefill: step 0).
"""

from __future__ import annotations

import statistics
import time
from copy import deepcopy
from datetime import datetime, timezone

import torch
from transformers import DynamicCache

from engine.errors import InvalidRequest
from engine.lab import host
from engine.profile.measure import time_pass
from engine.profile.ops import FAMILY, LAYER_OPS, Dims, predicted
from engine.profile.plan import activation, attention_kind, layer_plans
from engine.run.sampling import pick, warpers
from engine.schema.specs import dtype_bytes
from engine.schema.trace import Trace

REPEATS = 3                      # hooked and plain passes each, alternating (median reported)
FREE_MS = 1500.0                 # an automatic replay estimated under this runs whatever the run cost


def replay_ms(trace: Trace, repeats: int, step: int | None = None) -> float:
    """What replaying `trace` would cost, estimated from its own passes: for the prefill and the
    decode step, a warm-up and `repeats` plain and hooked passes each, and the prefix's pass."""
    step = len(trace.steps) // 2 if step is None else step
    prefill, decode = trace.prefill.ms if trace.prefill else 0.0, trace.steps[step].forward_ms
    return (1 + 2 * repeats) * (prefill + decode) + prefill


def affordable_repeats(trace: Trace, most: int = REPEATS) -> int:
    """How many timed passes of each the automatic profile after a run may take: the most (up to
    `most`) whose replay costs no more than the run's own model time, or FREE_MS; 0: not even one
    (an 8B model's long prompt and a short answer): the visitor profiles it on demand (the button)."""
    budget = max(sum(s.ms for s in trace.steps), FREE_MS)
    return next((r for r in range(most, 0, -1) if replay_ms(trace, r) <= budget), 0)


def machine(engine) -> dict:
    """This machine's read bandwidth and matmul FLOP/s in the model's dtype: the host's one
    measurement, the one the lab's roofline and batching frontier divide by (engine/lab/host.py),
    taken here under the engine's lock if nothing on this host has taken it yet."""
    found = host.figures(engine.device, engine.model.dtype, hold=engine.lock)
    return {k: found[k] for k in ("bandwidth_bytes_s", "peak_flops", "method", "host", "measured_at")}


def _phase(engine, timing: dict, dims: Dims, tokens: int, keys: int, extra: dict, hw: dict) -> dict:
    """One pass's table: per layer and op, measured beside predicted; and the same summed per op."""
    b = dtype_bytes(str(engine.model.dtype))
    plan, rope = own_plan(engine.model)
    rows = []
    for row in predicted(dims, tokens, keys, b, hw["peak_flops"], hw["bandwidth_bytes_s"], plan, rope):
        key = (row["layer"], row["op"])
        measured = timing["ops"].get(key, extra.get(row["op"]))
        rows.append({**row, "family": FAMILY[row["op"]], "measured_ms": measured})
    rows.append({"layer": None, "op": "other", "family": "other", "flops": 0.0, "bytes": 0.0, "predicted_ms": None,
                 "bound": None, "measured_ms": timing["ops"][(None, "other")]})
    rows.append({"layer": None, "op": "watching", "family": "watching", "flops": 0.0, "bytes": 0.0,
                 "predicted_ms": None, "bound": None, "measured_ms": extra.get("watching")})
    for row in rows:
        m, p = row["measured_ms"], row["predicted_ms"]
        row["ratio"] = m / p if m is not None and p else None
    ops = []
    present = {r["op"] for r in rows}
    for op in [*LAYER_OPS, "embed", "rope_tables", "final_norm", "lm_head", "other", "sampling", "watching"]:
        mine = [r for r in rows if r["op"] == op]
        if op not in present:
            continue
        measured = [r["measured_ms"] for r in mine if r["measured_ms"] is not None]
        pred = [r["predicted_ms"] for r in mine if r["predicted_ms"] is not None]
        total_m, total_p = (sum(measured) if measured else None), (sum(pred) if pred else None)
        ops.append({"op": op, "family": FAMILY[op], "layers": sum(r["layer"] is not None for r in mine),
                    "measured_ms": total_m, "predicted_ms": total_p, "bound": mine[0]["bound"],
                    "flops": sum(r["flops"] for r in mine), "bytes": sum(r["bytes"] for r in mine),
                    "ratio": total_m / total_p if total_m is not None and total_p else None})
    in_pass = [r["measured_ms"] for r in rows if r["op"] not in ("sampling", "watching")]
    return {"tokens": tokens, "keys": keys, "forward_ms": timing["plain_ms"], "hooked_ms": timing["hooked_ms"],
            "overhead_ms": timing["hooked_ms"] - timing["plain_ms"], "ops_sum_ms": sum(in_pass),
            "plain_runs": timing["plain_runs"], "hooked_runs": timing["hooked_runs"], "warmup_ms": timing.get("warmup_ms"),
            "predicted_ms": sum(r["predicted_ms"] or 0.0 for r in rows), "rows": rows, "ops": ops,
            # how often each timed module ran in the pass shown ("layer.name"; the model's own: "name"):
            # a module called from outside the pass (another visitor's lens) would show here
            "module_calls": {".".join(str(k) for k in key if k is not None): n
                             for key, n in sorted(timing["calls"].items(), key=str)}}


def own_plan(model) -> tuple[list, bool]:
    """The model's layers as its module tree has them (engine/profile/plan.py), and whether it has RoPE."""
    plans = layer_plans(model)
    return [p.layer for p in plans], any(p.layer.rope for p in plans)


def _sampling_ms(engine, logits: torch.Tensor, trace: Trace, context: list[int], repeats: int) -> float:
    """The run's own token choice (its sampling settings) on these logits, median of `repeats`."""
    s = trace.settings
    chain, generator = warpers(s.temperature, s.top_k, s.top_p), torch.Generator(device=engine.device).manual_seed(s.seed)
    ids, times = torch.tensor([context]), []
    for _ in range(repeats + 1):
        start = time.perf_counter_ns()
        pick(logits, s, chain, ids, generator)
        times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times[1:])


def replay(engine, prompt: list[int], prefix: list[int], token: int, repeats: int) -> tuple[dict, dict]:
    """The prefill of `prompt`, then the decode step that feeds `token` after `prefix`, each timed
    (measure.time_pass): a fresh cache for every prefill; for the step, `prefix` in a cache once (not
    timed), copied before every repeat."""
    model, device = engine.model, engine.device
    with torch.inference_mode():
        state = {}

        def fresh():
            state["cache"] = DynamicCache(config=model.config)

        def prefill():
            return model(input_ids=torch.tensor([prompt], device=device), cache=state["cache"], use_cache=True,
                         logits_to_keep=1)
        first = time_pass(model, fresh, prefill, repeats, engine.lock)
        base = DynamicCache(config=model.config)
        with engine.lock:
            model(input_ids=torch.tensor([prefix], device=device), cache=base, use_cache=True, logits_to_keep=1)

        def copy():          # the prefix's cache as it was: a copy (a sliding-window layer cannot be cropped)
            state["cache"] = deepcopy(base)

        def decode():
            return model(input_ids=torch.tensor([[token]], device=device), cache=state["cache"], use_cache=True,
                         logits_to_keep=1)
        return first, time_pass(model, copy, decode, repeats, engine.lock)


def profile_trace(engine, trace: Trace, step: int | None = None, repeats: int = REPEATS) -> dict:
    """The profile of `trace`'s run on `engine` (its model): prefill, and decode step `step` (default:
    the middle of the run; 1..steps-1). Raises InvalidRequest when the trace cannot be replayed here."""
    if trace.model.id != engine.info.id or trace.model.source == "served":
        raise InvalidRequest("the profile replays a run of this page's model", "profile_other_model")
    prompt = [t.id for t in trace.prompt.tokens]
    generated = [s.id for s in trace.steps]
    if len(generated) < 2:
        raise InvalidRequest("the profile needs a run of at least two tokens", "profile_too_short")
    step = len(generated) // 2 if step is None else int(step)
    if not 1 <= step <= len(generated) - 1:
        raise InvalidRequest(f"the decode step must be 1..{len(generated) - 1}", "profile_step",
                             most=len(generated) - 1)
    dims, hw = Dims.of_config(engine.model.config), machine(engine)
    prefix = prompt + generated[:step - 1]
    with host.watching_load() as load:        # the machine's other work while the replay ran
        first, later = replay(engine, prompt, prefix, generated[step - 1], repeats)
    sample = [_sampling_ms(engine, t["output"].logits[0, -1].float(), trace, ctx, repeats)
              for t, ctx in ((first, prompt), (later, prefix + generated[step - 1:step]))]
    watch = [trace.steps[0].observe_ms, trace.steps[step].observe_ms]
    return {
        "model": engine.info.id, "device": engine.info.device, "dtype": engine.info.dtype,
        "threads": torch.get_num_threads(), "prompt": trace.prompt.raw[:200], "run_id": trace.run_id,
        "created": trace.created, "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "decode_step": step, "steps": len(generated), "repeats": repeats,
        "replay": "eager", "run_decode_path": trace.observation.decode if trace.observation else "eager",
        "machine": {"name": engine.info.device, **hw},
        # the run's own passes, as its cards show them (the capture taken out), and the replay's load:
        # what the profile's text compares its timed and plain passes with
        "run_ms": {"prefill": trace.prefill.ms if trace.prefill else None, "decode": trace.steps[step].forward_ms},
        "load": load.result(),
        "attention": attention_kind(engine.model),     # the attention op's name: positions, implementation, soft-cap
        "activation": activation(engine.model),        # the MLP activation's name (SiLU, GELU, ...)
        "phases": {
            "prefill": _phase(engine, first, dims, len(prompt), len(prompt),
                              {"sampling": sample[0], "watching": watch[0]}, hw),
            "decode": _phase(engine, later, dims, 1, len(prefix) + 1, {"sampling": sample[1], "watching": watch[1]}, hw),
        },
    }
