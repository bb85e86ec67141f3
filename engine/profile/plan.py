"""A model's decoder layers as the profile counts and times them, read from its module tree and config
(not from Llama's names): each layer's matmuls with their weights' shapes (a Linear, GPT-2's Conv1D, a
fused q/k/v or gate/up), its norms, its attention (sliding window or not, from the config's layer
types), its MLP (gated or plain) or its mixture of experts (router, experts at the routed share).

`layer_plans(model)` gives, per layer, the `ops.Layer` the counts need and the modules to time: each
op's modules (timed directly), and the blocks "layer", "attn" and (a dense MLP) "mlp", whose own work
outside their timed children is an op of its own (measure.py). A layer with a module the profile
cannot place is refused (InvalidRequest "profile_unsupported"), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from engine.errors import InvalidRequest
from engine.model.attention import FAST_NAME, NAME
from engine.model.hooks import attention_modules, decoder_layers
from engine.profile.ops import LAYER_OPS, Layer

ATTN_LINEARS = {"q_proj": "q_proj", "query": "q_proj", "k_proj": "k_proj", "key": "k_proj", "v_proj": "v_proj",
                "value": "v_proj", "qkv_proj": "qkv_proj", "query_key_value": "qkv_proj", "c_attn": "qkv_proj",
                "Wqkv": "qkv_proj", "W_pack": "qkv_proj", "o_proj": "o_proj", "dense": "o_proj", "c_proj": "o_proj",
                "out_proj": "o_proj"}
MLP_LINEARS = {"gate_proj": "gate_proj", "w1": "gate_proj", "up_proj": "up_proj", "w3": "up_proj", "c_fc": "up_proj",
               "fc1": "up_proj", "fc_in": "up_proj", "dense_h_to_4h": "up_proj", "gate_up_proj": "gate_up_proj",
               "down_proj": "down_proj", "w2": "down_proj", "c_proj": "down_proj", "fc2": "down_proj",
               "fc_out": "down_proj", "dense_4h_to_h": "down_proj"}
NORMS = {"input_layernorm": "input_norm", "ln_1": "input_norm", "attention_norm": "input_norm",
         "post_attention_layernorm": "post_norm", "ln_2": "post_norm", "ffn_norm": "post_norm",
         "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffn_norm",
         "q_norm": "qk_norm", "k_norm": "qk_norm", "q_layernorm": "qk_norm", "k_layernorm": "qk_norm"}
ROUTERS = ("gate", "router")


@dataclass
class LayerPlan:
    layer: Layer                     # what the counts need
    ops: dict                        # op -> [modules] timed as that op
    blocks: dict                     # "layer", "attn", "mlp" (dense only) -> module
    children: dict                   # block -> the ops timed inside it


def _is_norm(m: nn.Module) -> bool:
    return "norm" in type(m).__name__.lower() and sum(p.numel() for p in m.parameters(recurse=False)) > 0


def _shape(m: nn.Module) -> tuple[int, int] | None:
    """(n_in, n_out) of a Linear or a Conv1D (GPT-2 stores its weight the other way round)."""
    w = getattr(m, "weight", None)
    if w is None or w.dim() != 2 or isinstance(m, (nn.Embedding,)) or _is_norm(m):
        return None
    return (w.shape[0], w.shape[1]) if type(m).__name__ == "Conv1D" else (w.shape[1], w.shape[0])


def _refuse(model, i: int, what: str):
    raise InvalidRequest(f"the profile cannot place {what} in layer {i} of {type(model).__name__}",
                         "profile_unsupported", model=type(model).__name__)


def _windows(config, n: int) -> list[int | None]:
    """The keys each layer reads at most: its sliding window on a sliding layer (config.layer_types),
    None on a full one."""
    c = config.get_text_config()
    window = getattr(c, "sliding_window", None)
    types = getattr(c, "layer_types", None)
    if not window or getattr(c, "use_sliding_window", True) is False:
        return [None] * n
    if types:
        return [window if "sliding" in str(t) else None for t in types[:n]]
    return [window] * n


def _params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def _attention(model, i, attn, plan, matmuls, norms):
    for name, child in attn.named_children():
        if _is_norm(child) and name in NORMS:
            plan.ops.setdefault("qk_norm", []).append(child)
            norms.append(("qk_norm", 0, _params(child)))        # values filled in by the caller
        elif (shape := _shape(child)) is not None:
            if name not in ATTN_LINEARS:
                _refuse(model, i, f"the attention's {name}")
            plan.ops.setdefault(ATTN_LINEARS[name], []).append(child)
            matmuls.append((ATTN_LINEARS[name], *shape))
        elif _params(child):
            _refuse(model, i, f"the attention's {name}")
    plan.children["attn"] = [op for op in plan.ops if op in ("qk_norm", *set(ATTN_LINEARS.values()))]


def _mlp(model, i, mlp, plan, matmuls, config) -> tuple[int, bool, tuple | None]:
    """The MLP's matmuls (dense) or its router and experts (a mixture): returns (act width, gated, experts)."""
    names = dict(mlp.named_children())
    if "experts" in names and any(r in names for r in ROUTERS):
        c = config.get_text_config()
        n = getattr(c, "num_experts", None) or getattr(c, "num_local_experts", None)
        k = getattr(c, "num_experts_per_tok", None)
        router = names[next(r for r in ROUTERS if r in names)]
        extra = [name for name in names if name not in ("experts", *ROUTERS) and _params(names[name])]
        if not n or not k or extra or (shape := _shape(router)) is None:
            _refuse(model, i, f"the experts' {', '.join(extra) or 'router'}")
        plan.ops["router"], plan.ops["experts"] = [router], [names["experts"]]
        matmuls.append(("router", *shape))
        return 0, True, (n, k, _params(names["experts"]) / n)
    widths = {}
    for name, child in names.items():
        if (shape := _shape(child)) is not None:
            if name not in MLP_LINEARS:
                _refuse(model, i, f"the MLP's {name}")
            op = MLP_LINEARS[name]
            plan.ops.setdefault(op, []).append(child)
            matmuls.append((op, *shape))
            widths[op] = shape
        elif _params(child):
            _refuse(model, i, f"the MLP's {name}")
    if "down_proj" not in widths:
        _refuse(model, i, "an MLP without a down projection")
    plan.blocks["mlp"] = mlp
    plan.children["mlp"] = [op for op in widths]
    return widths["down_proj"][0], "gate_proj" in widths or "gate_up_proj" in widths, None


def _has_rope(model) -> bool:
    return getattr(model.get_decoder() if hasattr(model, "get_decoder") else model.base_model,
                   "rotary_emb", None) is not None


POSITION_EMBEDDINGS = ("wpe", "embed_positions", "position_embeddings")
SDPA_WRAPPERS = {NAME: "sdpa", FAST_NAME: "sdpa"}     # the engine's own names for SDPA with its capture beside it


def attention_kind(model) -> dict:
    """What this model's attention does, for the op's name: its positions ("rope": rotary tables;
    "learned": a position embedding added to the input, as GPT-2's wpe; "none" seen), the
    implementation it runs with (config._attn_implementation: "sdpa", also for the engine's own SDPA
    with its capture, "eager", ...) and a soft-cap on
    its scores (Gemma 2's attn_logit_softcapping), all read from the model and its config."""
    c = model.config.get_text_config()
    impl = getattr(model.config, "_attn_implementation", None)
    learned = any(isinstance(m, nn.Embedding) and name.rsplit(".", 1)[-1] in POSITION_EMBEDDINGS
                  for name, m in model.named_modules())
    return {"positions": "rope" if _has_rope(model) else "learned" if learned else "none",
            "impl": SDPA_WRAPPERS.get(impl, impl),
            "softcap": getattr(c, "attn_logit_softcapping", None)}


def activation(model) -> str | None:
    """The MLP's activation as the config names it ("silu", "gelu_pytorch_tanh", "gelu_new", ...): the
    name of the profile's activation op and group."""
    c = model.config.get_text_config()
    for key in ("hidden_activation", "hidden_act", "activation_function"):
        if isinstance(getattr(c, key, None), str):
            return getattr(c, key)
    return None


def layer_plans(model) -> list[LayerPlan]:
    """Every decoder layer's plan (the module docstring says what it holds)."""
    config, out = model.config, []
    c = config.get_text_config()
    heads = c.num_attention_heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // heads
    kv = (getattr(c, "num_key_value_heads", None) or heads) * head_dim
    rope = getattr(c, "partial_rotary_factor", None) or getattr(c, "rotary_pct", None) or 1.0
    has_rope = _has_rope(model)
    blocks, attns = decoder_layers(model), attention_modules(model)
    for i, (block, attn, window) in enumerate(zip(blocks, attns, _windows(config, len(blocks)))):
        plan, matmuls, norms = LayerPlan(Layer(), {}, {"layer": block, "attn": attn}, {}), [], []
        act, gated, experts = 0, True, None
        for name, child in block.named_children():
            if child is attn:
                _attention(model, i, attn, plan, matmuls, norms)
            elif name == "mlp" or name == "feed_forward":
                act, gated, experts = _mlp(model, i, child, plan, matmuls, config)
            elif _is_norm(child):
                op = NORMS.get(name, "extra_norm")
                plan.ops.setdefault(op, []).append(child)
                norms.append((op, c.hidden_size, _params(child)))
            elif _params(child):
                _refuse(model, i, name)
        norms = [(op, heads * head_dim + kv if op == "qk_norm" else v, w) for op, v, w in norms]
        ops = [op for op in LAYER_OPS if op in plan.ops or op in ("attention", "residual")
               or (op == "act_mul" and act and gated) or (op == "act" and act and not gated)]
        plan.layer = Layer(matmuls=tuple(matmuls), norms=tuple(norms), act=act, gated=gated, window=window,
                           rope=rope if has_rope else 0.0, experts=experts, ops=tuple(ops))
        out.append(plan)
    return out
