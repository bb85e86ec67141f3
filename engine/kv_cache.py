"""The KV cache: measured from its tensors, and the formula it must match."""

from __future__ import annotations

from transformers import DynamicCache

from .trace import ModelInfo


def cache_tokens(cache: DynamicCache | None) -> int:
    return 0 if cache is None else int(cache.get_seq_length())


def cache_bytes(cache: DynamicCache | None) -> int:
    """Bytes held by every layer's key and value tensors ([batch, kv_heads, seq, head_dim] each)."""
    if cache is None:
        return 0
    total = 0
    for layer in cache.layers:
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if t is not None and t.numel():
                total += t.numel() * t.element_size()
    return total


def formula_bytes(info: ModelInfo, tokens: int, bytes_per_value: int) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x bytes per value x tokens."""
    return 2 * info.layers * info.kv_heads * info.head_dim * bytes_per_value * tokens
