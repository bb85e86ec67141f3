"""Timing each operation of one forward pass with timers around the model's own modules.

A forward pre-hook and a forward hook on every module that is one operation (the norms, the attention's
projections, the MLP's matmuls or a mixture's router and experts, the embedding, the final norm, the LM
head: each layer's plan, engine/profile/plan.py) and on the blocks that hold them (each layer, its
attention, a dense MLP) read a clock (after a device sync on CUDA, where
a clock read without it times the launch, not the work). What a block does outside its hooked
children is its own op: attention (RoPE, SDPA, reshapes) = the attention block less its four
projections (and q/k norms); act_mul (SiLU(gate)·up) or act (GELU) = the MLP less its matmuls;
residual = the layer less its norms, attention and MLP (a mixture's routing glue included) (the two adds and the block's Python); other = the whole pass less
everything above (masks, cache bookkeeping). The per-op times therefore add up to the hooked pass.

Measuring costs something: the hooks' clock reads and Python (~1 µs each, ~380 pairs a pass for a
30-layer model). Hooked and plain passes alternate, and the plain passes' median is the pass's own
time; `overhead_ms` (hooked less plain) is what the measuring added, stated beside it.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from contextlib import contextmanager, nullcontext

import torch

from engine.host.house import HOUSE
from engine.model.hooks import final_norm
from engine.profile.plan import layer_plans

POSITION_TABLES = ("wpe", "embed_positions")    # learned position tables (GPT-2): timed with the embedding

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Timers:
    """Milliseconds each hooked module took in the pass (summed over its calls)."""

    def __init__(self, device: torch.device):
        self.device, self.ms, self._start = device, defaultdict(float), {}
        self.calls = defaultdict(int)        # how often each module ran in the pass (a check: see run.py)

    def pre(self, key):
        def hook(_module, _args):
            _sync(self.device)
            self._start[key] = time.perf_counter_ns()
        return hook

    def post(self, key):
        def hook(_module, _args, _output):
            _sync(self.device)
            self.ms[key] += (time.perf_counter_ns() - self._start.pop(key)) / 1e6
            self.calls[key] += 1
        return hook


@contextmanager
def timed_modules(model, timers: Timers):
    """Hooks on every op and block of the model (keys: (layer, name), or (None, name) for the model's
    own), removed whatever happens."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
    targets = [((None, "embed"), model.get_input_embeddings()), ((None, "final_norm"), final_norm(model)),
               ((None, "lm_head"), model.get_output_embeddings())]
    if getattr(decoder, "rotary_emb", None) is not None:
        targets.append(((None, "rope_tables"), decoder.rotary_emb))
    embeds = [model.get_input_embeddings(), *[m for n, m in decoder.named_children() if n in POSITION_TABLES]]
    targets[0:1] = [((None, "embed"), m) for m in embeds]
    for i, plan in enumerate(layer_plans(model)):
        targets += [((i, name), module) for name, module in plan.blocks.items()]
        targets += [((i, op), module) for op, modules in plan.ops.items() for module in modules]
    handles = []
    try:
        for key, module in targets:
            handles.append(module.register_forward_pre_hook(timers.pre(key)))
            handles.append(module.register_forward_hook(timers.post(key)))
        yield timers
    finally:
        for handle in handles:
            handle.remove()


def per_op(timers: Timers, pass_ms: float, plans: list) -> dict:
    """{(layer, op): ms} with the blocks' own work split out (the module docstring says how)."""
    t = timers.ms
    out = {}
    layers = len(plans)
    for i, plan in enumerate(plans):
        for op in plan.ops:
            out[(i, op)] = t[(i, op)]
        inside = set(plan.children.get("attn", ())) | set(plan.children.get("mlp", ()))
        out[(i, "attention")] = t[(i, "attn")] - sum(t[(i, k)] for k in plan.children.get("attn", ()))
        if "mlp" in plan.blocks:
            act = "act_mul" if plan.layer.gated else "act"
            out[(i, act)] = t[(i, "mlp")] - sum(t[(i, k)] for k in plan.children["mlp"])
        top = [k for k in plan.ops if k not in inside] + ["attn"] + (["mlp"] if "mlp" in plan.blocks else [])
        out[(i, "residual")] = t[(i, "layer")] - sum(t[(i, k)] for k in top)
    for op in ("embed", "rope_tables", "final_norm", "lm_head"):
        out[(None, op)] = t[(None, op)]
    out[(None, "other")] = pass_ms - sum(t[(None, op)] for op in ("embed", "rope_tables", "final_norm", "lm_head")) \
        - sum(t[(i, "layer")] for i in range(layers))
    return out


def time_pass(model, reset, run_pass, repeats: int, lock) -> dict:
    """`run_pass()` (one forward) timed `repeats` times plain and `repeats` times hooked, alternating,
    `reset()` (the cache back as it was) before each, off the clock. Each pass holds `lock` (the
    engine's) with its hooks registered only inside it, so another run's pass can go between two of
    these but never inside one, and never meets a timer. Returns the plain median, the median hooked
    pass with its per-op times, and the last pass's output."""
    device = model.device
    plans = layer_plans(model)
    layers = len(plans)

    def one(timers: Timers | None) -> tuple[float, object]:
        with lock, HOUSE.visitor_pass(), (timed_modules(model, timers) if timers is not None else nullcontext()):
            reset()
            _sync(device)
            start = time.perf_counter_ns()
            out = run_pass()
            _sync(device)
            return (time.perf_counter_ns() - start) / 1e6, out

    warmup_ms, _ = one(None)                           # warm-up: first calls pay one-off costs (kept, said)
    plain, hooked, ops, calls = [], [], defaultdict(list), []
    for _ in range(repeats):
        ms, out = one(None)
        plain.append(ms)
        timers = Timers(device)
        ms, out = one(timers)
        hooked.append(ms)
        for key, value in per_op(timers, ms, plans).items():
            ops[key].append(value)
        calls.append(dict(timers.calls))
    # The ops are those of the median hooked pass, so they add up to the pass shown beside them (medians
    # taken op by op do not: on a busy host they drifted 10 % from the median pass).
    middle = hooked.index(statistics.median_low(hooked))
    return {"plain_ms": statistics.median(plain), "hooked_ms": hooked[middle], "plain_runs": plain,
            "hooked_runs": hooked, "warmup_ms": warmup_ms, "ops": {key: v[middle] for key, v in ops.items()},
            "calls": calls[middle], "output": out}
