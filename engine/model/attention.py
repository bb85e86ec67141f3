"""Attention capture without switching kernels: one attention function, registered with
transformers' `AttentionInterface`, that computes every layer's output with SDPA exactly as an
uncaptured run does, and only when a pass asks for it also computes the probabilities we keep.

Why not ask the model for its attention weights? SDPA (the fused kernel) never forms them; only
the "eager" implementation does, by writing the whole heads × T × T score matrix. Switching the
shared model to eager for a watched run changed what was measured (another kernel, other
timings). Here the output always comes from SDPA, and the probabilities are recomputed on the
side for what the trace keeps: the newest query's row (one row per head, a few microseconds) and,
at prefill, the capped map of the first `map_tokens` positions.

The capture request travels with the forward call as a keyword argument (`model(...,
tbt_capture=capture)`): transformers passes extra keyword arguments down to the attention
function, so nothing global is switched and two runs' passes can never see each other's request.
"""

from __future__ import annotations

import threading
import time

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

NAME = "tbt_sdpa"          # the implementation name the engine sets on its model
KWARG = "tbt_capture"      # the keyword argument that carries a pass's Capture
_registered = threading.Lock()


def register() -> None:
    """Add the function (and SDPA's mask builder, without which a custom name silently gets no
    causal mask) to transformers' process-wide tables. Idempotent.

    Process-wide, and still safe for concurrent visitors: the name is fixed and always maps to the
    same two module-level functions, so a second registration (another engine, another visitor's
    model) writes what is already there; a pass looks the name up in a dict, which a write under
    the GIL never leaves half-done; and the functions keep no state of their own: what one pass
    asks for travels in that pass's keyword arguments (KWARG). Nothing a visitor does changes the
    table."""
    with _registered:
        AttentionInterface.register(NAME, attention_forward)
        AttentionMaskInterface.register(NAME, sdpa_mask)


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """query: [batch, heads, q_len, head_dim]; key/value: [batch, kv_heads, k_len, head_dim]
    (the cache's keys, this pass's included). Returns (output, None) like SDPA."""
    capture = kwargs.pop(KWARG, None)
    out = sdpa_attention_forward(module, query, key, value, attention_mask,
                                 dropout=dropout, scaling=scaling, **kwargs)
    if capture is not None and capture.attention:
        start = time.perf_counter()     # host clock: on CUDA this is the launch, a small part of the pass
        record(capture, module.layer_idx, query, key, attention_mask,
               scaling if scaling is not None else query.shape[-1] ** -0.5)
        capture.calls += 1
        capture.inside_ms += (time.perf_counter() - start) * 1000.0
    return out


def scores(query: torch.Tensor, key: torch.Tensor, scaling: float) -> torch.Tensor:
    """Scaled dot products of grouped-query heads without copying K.

    query: [heads, q, d] -> viewed as [kv_heads, group, q, d], so each group of query heads meets
    its one shared key head by broadcasting; key: [kv_heads, k, d]. Returns [heads, q, k] float32.
    """
    heads, q_len, dim = query.shape
    kv_heads = key.shape[0]
    grouped = query.float().view(kv_heads, heads // kv_heads, q_len, dim)
    s = torch.matmul(grouped, key.float().transpose(-1, -2)[:, None]) * scaling   # [kv, group, q, k]
    return s.reshape(heads, q_len, key.shape[1])


def masked_softmax(s: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over keys after the model's mask: a boolean mask keeps True; a float mask adds."""
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.float()
    return torch.softmax(s, dim=-1)


def record(capture, layer: int, query, key, attention_mask, scaling: float) -> None:
    """Keep the newest query's row for every head, and at a fresh prefill the [:n, :n] map.

    A decode pass without a mask (one query that sees every key) only sets its query and keys
    aside: `finish` then scores all layers in one batched matmul after the pass, instead of a
    handful of tiny kernels in each of the layers.
    """
    q_len, k_len = query.shape[2], key.shape[2]
    if q_len == 1 and attention_mask is None:
        capture.pending.append((layer, query[0, :, 0], key[0], scaling))   # [heads, d], [kv, k, d]
        return
    mask = attention_mask[0, 0] if attention_mask is not None else None          # [q, k] or None
    last = scores(query[0, :, -1:], key[0], scaling)                              # [heads, 1, k]
    capture.rows[layer] = masked_softmax(last, None if mask is None else mask[-1:])[:, 0]
    n = min(capture.map_tokens, q_len)
    if n and q_len == k_len:          # the queries are positions 0..T-1: a prefill on an empty cache
        s = scores(query[0, :, :n], key[0, :, :n], scaling)                        # [heads, n, n]
        causal = torch.ones(n, n, dtype=torch.bool, device=s.device).tril()
        if mask is not None and mask.dtype == torch.bool:
            causal = causal & mask[:n, :n]
        capture.maps[layer] = masked_softmax(s, causal)


def finish(capture) -> None:
    """Score the decode queries set aside by `record`: all layers at once when their key lengths,
    scalings and devices agree (they do, except in models that mix window sizes or are sharded
    over several GPUs), else layer by layer."""
    pending, capture.pending = capture.pending, []
    if not pending:
        return
    layers, queries, keys, scalings = zip(*pending)
    if len({k.shape for k in keys}) == 1 and len(set(scalings)) == 1 and len({k.device for k in keys}) == 1:
        kv_heads, k_len, dim = keys[0].shape
        heads = queries[0].shape[0]
        # one batched matmul: (layers x kv_heads) groups of [group, d] @ [d, k]
        q = torch.stack(queries).float().view(-1, heads // kv_heads, dim)     # [L*kv, group, d]
        k = torch.stack(keys).float().view(-1, k_len, dim)                    # [L*kv, k, d]
        rows = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * scalings[0], dim=-1)
        capture.rows.update(zip(layers, rows.view(len(layers), heads, k_len)))
    else:
        for layer, q, k, scaling in pending:
            capture.rows[layer] = torch.softmax(scores(q[:, None], k, scaling), dim=-1)[:, 0]


# --- the compiled decode step (engine/compiled/fast.py) ---------------------------------------------------
FAST_NAME = "tbt_fast"      # the implementation name of the fast path's own copy of the model
ROWS = "tbt_rows"           # the keyword argument that carries a compiled step's list of rows


def register_fast() -> None:
    """Add the compiled step's attention function (and SDPA's mask builder). Idempotent."""
    with _registered:
        AttentionInterface.register(FAST_NAME, fast_attention_forward)
        AttentionMaskInterface.register(FAST_NAME, sdpa_mask)


def fast_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """SDPA's output, and when the step passes a list under `tbt_rows`, the newest query's attention
    row appended to it: inside a compiled graph that list becomes one of the step's outputs, so the
    capture is part of the graph (no hook, no Python callback per layer). `key` is the whole static
    cache ([batch, kv_heads, max_len, head_dim]); the mask gives the slots not yet written
    probability 0."""
    rows = kwargs.pop(ROWS, None)
    out = sdpa_attention_forward(module, query, key, value, attention_mask,
                                 dropout=dropout, scaling=scaling, **kwargs)
    if rows is not None:
        s = scores(query[0, :, -1:], key[0], scaling if scaling is not None else query.shape[-1] ** -0.5)
        mask = attention_mask[0, 0, -1:] if attention_mask is not None else None   # [1, keys]
        rows.append(masked_softmax(s, mask)[:, 0])                                   # [heads, keys]
    return out
