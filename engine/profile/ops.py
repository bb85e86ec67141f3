"""Each operation of a decoder pass as arithmetic and memory traffic, from the model's own layers (their
weights' shapes, `engine/profile/plan.py`) and its config, and the time the roofline allows it (no torch).

A pass over T new tokens with S keys in the cache afterwards (prefill: S = T; a decode step: T = 1):
  norm        a norm over T x W values:    4·T·W FLOPs; reads and writes T·W, reads its weights
  matmul      T x n_in @ n_in x n_out (a Linear, GPT-2's Conv1D, a fused q/k/v or gate/up):
              2·T·n_in·n_out FLOPs; reads the weight matrix once, T·n_in in, T·n_out out
  attention   RoPE, Q·Kᵀ, softmax, ·V (what SDPA computes) over the keys the layer reads: all S, or at
              most its window on a sliding-window layer:
              4·heads·T·S'·d + 5·heads·T·S' (+ 6·T·(heads + kv)·d RoPE) FLOPs; reads Q, K and V of S'
              keys (kv heads only: grouped-query attention shares them), writes T x heads·d and the new K, V
  act         the MLP's activation over T x I: gated (SiLU(gate)·up) ~5·T·I FLOPs, reads 2·T·I; plain
              (GELU) ~4·T·I, reads T·I; writes T·I
  router      a mixture of experts' T x H @ H x E scores (its top-k inside)
  experts     the routed share of the experts: each token runs k of E experts, so a decode step reads k
              experts' weights and T tokens read the experts they are expected to touch, E·(1-(1-k/E)^T)
  residual    the two adds of the block (parallel or one after the other): 2·T·H FLOPs, 6·T·H values moved
  lm_head     the last position only (logits_to_keep=1): 2·H·V FLOPs, reads the V x H head
The bound of an op is max(FLOPs / peak FLOP/s, bytes / bandwidth): "compute" when the arithmetic takes
longer, "memory" when the bytes do. Values are `bytes_per_value` wide (the model's dtype); these are
the ideal counts (each weight and activation touched once), not what a given kernel does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The ops a decoder layer can hold, in the order a pass meets them (a model has a subset: its plan);
# "other" is the rest of the pass (masks, cache bookkeeping, Python): measured, with no prediction;
# "sampling" and "watching" sit after the pass.
LAYER_OPS = ("input_norm", "q_proj", "k_proj", "v_proj", "qkv_proj", "qk_norm", "attention", "o_proj", "post_norm",
             "ffn_norm", "gate_proj", "up_proj", "gate_up_proj", "act_mul", "act", "router", "experts", "down_proj",
             "post_ffn_norm", "extra_norm", "residual")
LLAMA_OPS = ("input_norm", "q_proj", "k_proj", "v_proj", "attention", "o_proj", "post_norm",
             "gate_proj", "up_proj", "act_mul", "down_proj", "residual")
FAMILY = {**{op: "norm" for op in ("input_norm", "post_norm", "final_norm", "qk_norm", "ffn_norm", "post_ffn_norm",
                                   "extra_norm")},
          **{op: "matmul" for op in ("q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj", "gate_proj", "up_proj",
                                     "gate_up_proj", "down_proj", "lm_head", "router", "experts")},
          "attention": "attention", "act_mul": "elementwise", "act": "elementwise", "residual": "elementwise",
          "embed": "memory", "rope_tables": "elementwise", "other": "other", "sampling": "sampling",
          "watching": "watching"}


@dataclass(frozen=True)
class Dims:
    """The sizes the counts need: from a loaded model's config (`of_config`) or a public spec."""
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int

    @classmethod
    def of_config(cls, config) -> Dims:
        c = config.get_text_config()
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        mlp = getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) or 4 * c.hidden_size
        return cls(layers=c.num_hidden_layers, hidden=c.hidden_size, heads=c.num_attention_heads,
                   kv_heads=getattr(c, "num_key_value_heads", None) or c.num_attention_heads, head_dim=head_dim,
                   intermediate=mlp, vocab=c.vocab_size)


@dataclass(frozen=True)
class Layer:
    """One decoder layer as the profile counts it: its matmuls (op, n_in, n_out) and norms (op, values a
    token, weights) as its modules hold them, its activation, attention window and experts."""
    matmuls: tuple = ()
    norms: tuple = ()
    act: int = 0                    # width the MLP's activation runs over (0: none outside the experts)
    gated: bool = True
    window: int | None = None       # a sliding-window layer reads at most this many keys
    rope: float = 1.0               # the share of each head RoPE rotates (0: no RoPE)
    experts: tuple | None = None    # (E, k, weights of one expert)
    ops: tuple = field(default=())  # op names in pass order

    @classmethod
    def llama(cls, d: Dims) -> Layer:
        """A Llama-style layer (the public models of the projection)."""
        q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
        return cls(matmuls=(("q_proj", d.hidden, q), ("k_proj", d.hidden, kv), ("v_proj", d.hidden, kv),
                            ("o_proj", q, d.hidden), ("gate_proj", d.hidden, d.intermediate),
                            ("up_proj", d.hidden, d.intermediate), ("down_proj", d.intermediate, d.hidden)),
                   norms=(("input_norm", d.hidden, d.hidden), ("post_norm", d.hidden, d.hidden)),
                   act=d.intermediate, ops=LLAMA_OPS)


def matmul(t: int, n_in: int, n_out: int, b: int) -> tuple[float, float]:
    """FLOPs and bytes of T x n_in @ n_in x n_out: the weight once, the input and the output."""
    return 2.0 * t * n_in * n_out, float(b * (n_in * n_out + t * n_in + t * n_out))


def layer_costs(d: Dims, t: int, s: int, b: int, layer: Layer | None = None) -> dict[str, tuple[float, float]]:
    """{op: (FLOPs, bytes)} of one decoder layer over T new tokens and S keys, in pass order."""
    layer = layer or Layer.llama(d)
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    keys = min(s, layer.window) if layer.window else s
    costs: dict[str, list[float]] = {}

    def add(op, flops, nbytes):
        c = costs.setdefault(op, [0.0, 0.0])
        c[0], c[1] = c[0] + flops, c[1] + nbytes
    for op, values, weights in layer.norms:
        add(op, 4.0 * t * values, float(b * (2 * t * values + weights)))
    for op, n_in, n_out in layer.matmuls:
        add(op, *matmul(t, n_in, n_out, b))
    add("attention", 4.0 * d.heads * t * keys * d.head_dim + 5.0 * d.heads * t * keys + 6.0 * t * (q + kv) * layer.rope,
        float(b * (t * q + 2 * keys * kv + t * q + 2 * t * kv)))
    if layer.act:
        add("act_mul" if layer.gated else "act", (5.0 if layer.gated else 4.0) * t * layer.act,
            float(b * (3 if layer.gated else 2) * t * layer.act))
    if layer.experts:
        n, k, weights = layer.experts
        touched = n * (1 - (1 - k / n) ** t)                      # experts T tokens are expected to reach
        inner = weights / (3 * d.hidden)                          # gate, up, down of H x I each
        add("experts", 2.0 * t * k * weights + 5.0 * t * k * inner,
            float(b * (touched * weights + 2 * t * d.hidden + 3 * t * k * inner)))
    add("residual", 2.0 * t * d.hidden, float(b * 6 * t * d.hidden))
    order = layer.ops or tuple(costs)
    return {op: tuple(costs[op]) for op in order if op in costs}


def model_costs(d: Dims, t: int, b: int) -> dict[str, tuple[float, float]]:
    """{op: (FLOPs, bytes)} of the pass's parts outside the layers, and of picking the token."""
    return {
        "embed": (0.0, float(b * 2 * t * d.hidden)),                           # T rows looked up, written
        "rope_tables": (2.0 * t * d.head_dim, float(b * 2 * t * d.head_dim)),  # cos and sin for T positions
        "final_norm": (4.0 * t * d.hidden, float(b * (2 * t * d.hidden + d.hidden))),
        "lm_head": matmul(1, d.hidden, d.vocab, b),
        "sampling": (2.0 * d.vocab, 4.0 * d.vocab),                            # float32 logits, scanned once
    }


def bound(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> tuple[float, str]:
    """The roofline's time in ms and what sets it ("compute" or "memory")."""
    compute, memory = flops / peak_flops * 1000, nbytes / bandwidth * 1000
    return max(compute, memory), "compute" if compute >= memory else "memory"


def predicted(d: Dims, t: int, s: int, b: int, peak_flops: float, bandwidth: float,
              plan: list[Layer] | None = None, rope: bool = True) -> list[dict]:
    """Every op of a pass with its FLOPs, bytes and roofline time: per layer (layer 0..L-1, each as its
    plan has it; default Llama-style), then the model's own (layer None; no RoPE tables without RoPE)."""
    rows = []
    plan = plan or [Layer.llama(d)] * d.layers
    for i, layer in enumerate(plan):
        for op, (flops, nbytes) in layer_costs(d, t, s, b, layer).items():
            ms, by = bound(flops, nbytes, peak_flops, bandwidth)
            rows.append({"layer": i, "op": op, "flops": flops, "bytes": nbytes, "predicted_ms": ms, "bound": by})
    for op, (flops, nbytes) in model_costs(d, t, b).items():
        if op == "rope_tables" and not rope:
            continue
        ms, by = bound(flops, nbytes, peak_flops, bandwidth)
        rows.append({"layer": None, "op": op, "flops": flops, "bytes": nbytes, "predicted_ms": ms, "bound": by})
    return rows
