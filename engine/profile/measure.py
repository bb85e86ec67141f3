"""Timing each operation of one forward pass with timers around the model's own modules.

A forward pre-hook and a forward hook on every module that is one operation (the norms, the q/k/v/o
projections, the MLP's three matmuls, the embedding, the final norm, the LM head) and on the blocks
that hold them (each layer, its attention, its MLP) read a clock (after a device sync on CUDA, where
a clock read without it times the launch, not the work). What a block does outside its hooked
children is its own op: attention (RoPE, SDPA, reshapes) = the attention block less its four
projections; act_mul (SiLU(gate)·up) = the MLP less its three matmuls; residual = the layer less its
norms, attention and MLP (the two adds and the block's Python); other = the whole pass less
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

from engine.errors import InvalidRequest
from engine.model.hooks import attention_modules, decoder_layers, final_norm

# Module attribute names of a Llama-style block (Llama, Mistral, Qwen2/3, SmolLM): op -> path in the layer
LEAVES = {"input_norm": "input_layernorm", "post_norm": "post_attention_layernorm", "q_proj": "{attn}.q_proj",
          "k_proj": "{attn}.k_proj", "v_proj": "{attn}.v_proj", "o_proj": "{attn}.o_proj",
          "gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj", "down_proj": "mlp.down_proj"}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def layer_modules(model) -> list[dict[str, torch.nn.Module]]:
    """Per layer: {name: module} for the ops above and the blocks "layer", "attn", "mlp". Raises
    InvalidRequest for a model whose layers are not built this way."""
    found = []
    for i, (block, attn) in enumerate(zip(decoder_layers(model), attention_modules(model))):
        mods = {"layer": block, "attn": attn, "mlp": getattr(block, "mlp", None)}
        attn_name = next(n for n, m in block.named_children() if m is attn)
        for op, path in LEAVES.items():
            module = block
            for part in path.format(attn=attn_name).split("."):
                module = getattr(module, part, None)
            mods[op] = module
        missing = sorted(k for k, v in mods.items() if v is None)
        if missing:
            raise InvalidRequest(f"the profile knows Llama-style layers; layer {i} of {type(model).__name__} "
                                 f"has no {', '.join(missing)}", "profile_unsupported", model=type(model).__name__)
        found.append(mods)
    return found


class Timers:
    """Milliseconds each hooked module took in the pass (summed over its calls)."""

    def __init__(self, device: torch.device):
        self.device, self.ms, self._start = device, defaultdict(float), {}

    def pre(self, key):
        def hook(_module, _args):
            _sync(self.device)
            self._start[key] = time.perf_counter_ns()
        return hook

    def post(self, key):
        def hook(_module, _args, _output):
            _sync(self.device)
            self.ms[key] += (time.perf_counter_ns() - self._start.pop(key)) / 1e6
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
    for i, mods in enumerate(layer_modules(model)):
        targets += [((i, name), module) for name, module in mods.items()]
    handles = []
    try:
        for key, module in targets:
            handles.append(module.register_forward_pre_hook(timers.pre(key)))
            handles.append(module.register_forward_hook(timers.post(key)))
        yield timers
    finally:
        for handle in handles:
            handle.remove()


def per_op(timers: Timers, pass_ms: float, layers: int) -> dict:
    """{(layer, op): ms} with the blocks' own work split out (the module docstring says how)."""
    t = timers.ms
    out = {}
    for i in range(layers):
        for op in LEAVES:
            out[(i, op)] = t[(i, op)]
        out[(i, "attention")] = t[(i, "attn")] - sum(t[(i, k)] for k in ("q_proj", "k_proj", "v_proj", "o_proj"))
        out[(i, "act_mul")] = t[(i, "mlp")] - sum(t[(i, k)] for k in ("gate_proj", "up_proj", "down_proj"))
        out[(i, "residual")] = t[(i, "layer")] - sum(t[(i, k)] for k in ("input_norm", "post_norm", "attn", "mlp"))
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
    layers = len(decoder_layers(model))

    def one(timers: Timers | None) -> tuple[float, object]:
        with lock, (timed_modules(model, timers) if timers is not None else nullcontext()):
            reset()
            _sync(device)
            start = time.perf_counter_ns()
            out = run_pass()
            _sync(device)
            return (time.perf_counter_ns() - start) / 1e6, out

    warmup_ms, _ = one(None)                           # warm-up: first calls pay one-off costs (kept, said)
    plain, hooked, ops = [], [], defaultdict(list)
    for _ in range(repeats):
        ms, out = one(None)
        plain.append(ms)
        timers = Timers(device)
        ms, out = one(timers)
        hooked.append(ms)
        for key, value in per_op(timers, ms, layers).items():
            ops[key].append(value)
    # The ops are those of the median hooked pass, so they add up to the pass shown beside them (medians
    # taken op by op do not: on a busy host they drifted 10 % from the median pass).
    middle = hooked.index(statistics.median_low(hooked))
    return {"plain_ms": statistics.median(plain), "hooked_ms": hooked[middle], "plain_runs": plain,
            "hooked_runs": hooked, "warmup_ms": warmup_ms, "ops": {key: v[middle] for key, v in ops.items()},
            "output": out}
