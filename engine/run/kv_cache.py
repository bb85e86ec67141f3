"""The KV cache, measured from its tensors (the formula it must match: ModelInfo.kv_bytes, engine/schema/specs.py),
and copied as it stood after a prefix (a fork), sliding-window layers included."""

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


def _window(layer) -> int | None:
    return getattr(layer, "sliding_window", None)


def _first_held(layer) -> int:
    """The first position a cache layer still holds: 0, or for a sliding layer past its window, later."""
    return int(layer.get_seq_length()) - layer.keys.shape[-2] if _window(layer) else 0


def holds(cache: DynamicCache, positions: int) -> bool:
    """Whether every layer of `cache` holds what a pass after the first `positions` reads: all of
    them for a full layer, the newest window less one for a sliding layer."""
    for layer in cache.layers:
        if layer.keys is None or int(layer.get_seq_length()) < positions:
            return False
        if _window(layer) and max(0, positions - _window(layer) + 1) < _first_held(layer):
            return False
    return True


def cropped_copy(config, cache: DynamicCache, positions: int) -> DynamicCache:
    """A new cache as it stood after the first `positions` (copies: the branch writes on, the source
    stays as it was, and a view would pin the source's memory). A sliding layer gets the newest
    window less one of them, and its count of positions seen (`holds` has checked they are there)."""
    new = DynamicCache(config=config)
    for i, layer in enumerate(cache.layers):
        window, first = _window(layer), _first_held(layer)
        lo = max(0, positions - window + 1) if window else 0
        new.update(layer.keys[..., lo - first:positions - first, :].clone(),
                   layer.values[..., lo - first:positions - first, :].clone(), i)
        if window:
            new.layers[i].cumulative_length = positions
    return new
