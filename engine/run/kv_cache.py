"""The KV cache, measured from its tensors (the formula it must match: ModelInfo.kv_bytes, engine/schema/specs.py)."""

from __future__ import annotations

from transformers import DynamicCache


def cache_tokens(cache: DynamicCache | None) -> int:
    return 0 if cache is None else int(cache.get_seq_length())


def cache_bytes(cache: DynamicCache | None) -> int:
    """Bytes of the keys and values every layer holds ([batch, kv_heads, seq, head_dim] each). A
    static cache allocates all its slots at once; only the written ones count (its tensors' bytes
    per position times the positions written), so the curve is the same on both paths."""
    if cache is None:
        return 0
    total = 0
    for layer in cache.layers:
        written = int(layer.get_seq_length())
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if t is not None and t.numel():
                total += t.numel() // t.shape[-2] * min(written, t.shape[-2]) * t.element_size()
    return total

