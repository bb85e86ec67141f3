"""A token's embedding vector and its nearest neighbours by cosine similarity."""

from __future__ import annotations

import threading

import torch

from engine.model.core import Engine
from engine.errors import InvalidRequest

_norms_lock = threading.Lock()


def row_norms(engine: Engine) -> torch.Tensor:
    """The length of every input embedding row ([vocab]), kept on the engine (it goes with its
    model): 49,152 numbers instead of recomputing 28 million squares on every click."""
    table = engine.model.get_input_embeddings().weight
    with _norms_lock:
        norms = engine.embedding_norms
        if norms is None or norms.device != table.device or norms.shape[0] != table.shape[0]:
            with torch.inference_mode():
                norms = engine.embedding_norms = table.float().norm(dim=-1)
        return norms


def embedding_neighbors(engine: Engine, token_id: int, k: int = 8) -> tuple[list[float], list[dict]]:
    """The row of the input embedding matrix for `token_id` and the `k` closest other tokens.
    The weights are only read, so no run waits for this (the engine's lock is not taken)."""
    table = engine.model.get_input_embeddings().weight            # [vocab, hidden]
    if not 0 <= token_id < table.shape[0]:
        raise InvalidRequest(f"token id {token_id} is outside the vocabulary (0..{table.shape[0] - 1})")
    norms = row_norms(engine)
    with torch.inference_mode():
        vector = table[token_id].float()
        rows = table.float() if table.dtype != torch.float32 else table
        cosine = (rows @ vector) / (norms * vector.norm()).clamp_min(1e-12)
        cosine[token_id] = -2.0                                      # not its own neighbour
        best = torch.topk(cosine, k)
    neighbors = [{"id": int(i), "text": engine.text_of(int(i)), "cosine": float(c)}
                 for i, c in zip(best.indices.tolist(), best.values.tolist())]
    return vector.cpu().tolist(), neighbors
