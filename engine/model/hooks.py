"""Forward hooks that read attention weights and per-layer hidden states out of a running model.

Hooks are global state on a shared model: every hook is registered inside `hooked()` and removed
in its `finally`, so an error, a cancelled run or a closed generator never leaves one behind.
Layers are found by shape, not by name: the one ModuleList with as many blocks as the config has
layers, and in each block the attention child under one of the usual names.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from engine.errors import ModelLoadError

ATTENTION_NAMES = ("self_attn", "attn", "attention", "self_attention")


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The decoder blocks in order."""
    n = model.config.get_text_config().num_hidden_layers
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) == n:
            return list(module)
    raise ModelLoadError(f"cannot find the {n} decoder layers of {type(model).__name__}")


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """Each decoder block's attention module, in order."""
    found = []
    for i, block in enumerate(decoder_layers(model)):
        child = next((n for n in ATTENTION_NAMES if hasattr(block, n)), None)
        if child is None:
            raise ModelLoadError(f"no attention module inside decoder layer {i} ({type(block).__name__})")
        found.append(getattr(block, child))
    return found


def final_norm(model: nn.Module) -> nn.Module:
    """The model's own final norm, found by structure: the norm among the base model's direct
    children (not inside a decoder block), whatever its name (norm, ln_f, final_layernorm,
    final_layer_norm, ...). Several or none: the module whose output the LM head reads, seen in
    one tiny pass. Found once per model."""
    found = getattr(model, "_tbt_final_norm", None)
    if found is not None:
        return found
    base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
    norms = [m for m in base.children() if "norm" in type(m).__name__.lower()]
    found = norms[0] if len(norms) == 1 else _read_by_head(model, base)
    object.__setattr__(model, "_tbt_final_norm", found)   # not a submodule: kept out of the module tree
    return found


def _read_by_head(model: nn.Module, base: nn.Module) -> nn.Module:
    head = model.get_output_embeddings()
    blocks = {id(m) for block in decoder_layers(model) for m in block.modules()}
    outputs, fed = {}, []
    candidates = [m for m in base.modules() if id(m) not in blocks and m is not base and not list(m.children())]
    handles = [m.register_forward_hook(lambda mod, _a, out: outputs.__setitem__(id(mod), out)) for m in candidates]
    handles.append(head.register_forward_pre_hook(lambda _m, args: fed.append(args[0])))
    try:
        with torch.inference_mode():
            model(input_ids=torch.tensor([[0, 1]], device=head.weight.device), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    for m in reversed(candidates):
        out = outputs.get(id(m))
        if fed and isinstance(out, torch.Tensor) and out.shape == fed[0].shape and torch.equal(out, fed[0]):
            return m
    raise ModelLoadError(f"cannot find the final norm of {type(model).__name__}")


@dataclass
class Capture:
    """What one forward pass should keep, and what it kept (tensors stay on the model's device
    until the run packs them, so the pass itself never waits for a copy)."""
    attention: bool = False
    lens: bool = False
    map_tokens: int = 0                                            # keep the [:n, :n] maps too
    rows: dict[int, torch.Tensor] = field(default_factory=dict)    # layer -> [heads, keys], newest query
    maps: dict[int, torch.Tensor] = field(default_factory=dict)    # layer -> [heads, n, n]
    hidden: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> [hidden], last position
    pending: list = field(default_factory=list)   # decode queries and keys set aside for one batched scoring
    calls: int = 0                      # attention calls that recorded (0: the model bypassed our function)
    inside_ms: float = 0.0              # time spent capturing inside the forward pass (CPU clock)


@contextmanager
def hooked(model: nn.Module, capture: Capture, eager_attention: bool = False):
    """Register the hooks a pass needs, and remove them whatever happens.

    The logit lens reads every decoder block's output except the last one's: the last block
    followed by the final norm and the LM head is the model's own output, which the engine
    already has. `eager_attention` is the fallback for a model whose attention does not go
    through transformers' AttentionInterface: the pass runs with the eager kernel and the
    weights are read from each attention module's output.
    """
    handles = []

    def on_attention(layer: int):
        def hook(_module, _args, output):
            weights = output[1]  # [batch, heads, query_pos, key_pos]
            if weights is None:
                raise RuntimeError("attention weights were not returned; use the eager implementation")
            capture.rows[layer] = weights[0, :, -1, :].float()
            if capture.map_tokens and weights.shape[2] == weights.shape[3]:
                n = capture.map_tokens
                capture.maps[layer] = weights[0, :, :n, :n].float()
            capture.calls += 1
        return hook

    def on_block(layer: int):
        def hook(_module, _args, output):
            hidden = output[0] if isinstance(output, tuple) else output  # [batch, pos, hidden]
            capture.hidden[layer] = hidden[0, -1].detach()
        return hook

    try:
        if capture.attention and eager_attention:
            for i, module in enumerate(attention_modules(model)):
                handles.append(module.register_forward_hook(on_attention(i)))
        if capture.lens:
            for i, block in enumerate(decoder_layers(model)[:-1]):
                handles.append(block.register_forward_hook(on_block(i)))
        yield capture
    finally:
        for handle in handles:
            handle.remove()
