"""Each operation of a decoder pass as arithmetic and memory traffic, from the config and the pass's
shapes alone (no torch), and the time the roofline allows it.

A pass over T new tokens with S keys in the cache afterwards (prefill: S = T; a decode step: T = 1):
  norm        RMSNorm over T x H:          4·T·H FLOPs; reads and writes T·H, reads H weights
  q/k/v_proj  T x H @ H x (heads|kv)·d:     2·T·H·out FLOPs; reads the weight matrix once, T·H in, T·out out
  attention   RoPE, Q·Kᵀ, softmax, ·V (what SDPA computes, the full T x S rectangle):
              4·heads·T·S·d + 5·heads·T·S (+ 6·T·(heads + kv)·d RoPE) FLOPs; reads Q, K and V of S keys
              (kv heads only: grouped-query attention shares them), writes T x heads·d and the new K, V
  o_proj      T x heads·d @ heads·d x H
  gate/up     T x H @ H x I each;  act·mul  SiLU(gate)·up, ~5·T·I FLOPs;  down  T x I @ I x H
  residual    the two adds of the block: 2·T·H FLOPs, 6·T·H values moved
  lm_head     the last position only (logits_to_keep=1): 2·H·V FLOPs, reads the V x H head
The bound of an op is max(FLOPs / peak FLOP/s, bytes / bandwidth): "compute" when the arithmetic takes
longer, "memory" when the bytes do. Values are `bytes_per_value` wide (the model's dtype); these are
the ideal counts (each weight and activation touched once), not what a given kernel does.
"""

from __future__ import annotations

from dataclasses import dataclass

# One decoder layer's operations in the order they run, then the model's own, each with its family
# (the chart's colour). "other" is the rest of the pass (masks, cache bookkeeping, Python): measured,
# with no prediction; "sampling" and "watching" sit after the pass.
LAYER_OPS = ("input_norm", "q_proj", "k_proj", "v_proj", "attention", "o_proj", "post_norm",
             "gate_proj", "up_proj", "act_mul", "down_proj", "residual")
MODEL_OPS = ("embed", "rope_tables", "final_norm", "lm_head", "other", "sampling", "watching")
FAMILY = {"input_norm": "norm", "post_norm": "norm", "final_norm": "norm", "q_proj": "matmul", "k_proj": "matmul",
          "v_proj": "matmul", "o_proj": "matmul", "gate_proj": "matmul", "up_proj": "matmul",
          "down_proj": "matmul", "lm_head": "matmul", "attention": "attention", "act_mul": "elementwise",
          "residual": "elementwise", "embed": "memory", "rope_tables": "elementwise", "other": "other",
          "sampling": "sampling", "watching": "watching"}


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
        return cls(layers=c.num_hidden_layers, hidden=c.hidden_size, heads=c.num_attention_heads,
                   kv_heads=getattr(c, "num_key_value_heads", None) or c.num_attention_heads, head_dim=head_dim,
                   intermediate=c.intermediate_size, vocab=c.vocab_size)


def matmul(t: int, n_in: int, n_out: int, b: int) -> tuple[float, float]:
    """FLOPs and bytes of T x n_in @ n_in x n_out: the weight once, the input and the output."""
    return 2.0 * t * n_in * n_out, float(b * (n_in * n_out + t * n_in + t * n_out))


def layer_costs(d: Dims, t: int, s: int, b: int) -> dict[str, tuple[float, float]]:
    """{op: (FLOPs, bytes)} of one decoder layer over T new tokens and S keys."""
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    norm = (4.0 * t * d.hidden, float(b * (2 * t * d.hidden + d.hidden)))
    attention = (4.0 * d.heads * t * s * d.head_dim + 5.0 * d.heads * t * s + 6.0 * t * (q + kv),
                 float(b * (t * q + 2 * s * kv + t * q + 2 * t * kv)))
    return {
        "input_norm": norm, "q_proj": matmul(t, d.hidden, q, b), "k_proj": matmul(t, d.hidden, kv, b),
        "v_proj": matmul(t, d.hidden, kv, b), "attention": attention, "o_proj": matmul(t, q, d.hidden, b),
        "post_norm": norm, "gate_proj": matmul(t, d.hidden, d.intermediate, b),
        "up_proj": matmul(t, d.hidden, d.intermediate, b), "act_mul": (5.0 * t * d.intermediate,
                                                                        float(b * 3 * t * d.intermediate)),
        "down_proj": matmul(t, d.intermediate, d.hidden, b), "residual": (2.0 * t * d.hidden, float(b * 6 * t * d.hidden)),
    }


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


def predicted(d: Dims, t: int, s: int, b: int, peak_flops: float, bandwidth: float) -> list[dict]:
    """Every op of a pass with its FLOPs, bytes and roofline time: per layer (layer 0..L-1), then the
    model's own (layer None)."""
    rows = []
    per_layer = layer_costs(d, t, s, b)
    for layer in range(d.layers):
        for op in LAYER_OPS:
            flops, nbytes = per_layer[op]
            ms, by = bound(flops, nbytes, peak_flops, bandwidth)
            rows.append({"layer": layer, "op": op, "flops": flops, "bytes": nbytes, "predicted_ms": ms, "bound": by})
    for op, (flops, nbytes) in model_costs(d, t, b).items():
        ms, by = bound(flops, nbytes, peak_flops, bandwidth)
        rows.append({"layer": None, "op": op, "flops": flops, "bytes": nbytes, "predicted_ms": ms, "bound": by})
    return rows
