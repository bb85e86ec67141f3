"""A token's embedding vector and its nearest neighbours by cosine similarity."""

from __future__ import annotations

import torch

from .core import Engine
from .errors import InvalidRequest


def embedding_neighbors(engine: Engine, token_id: int, k: int = 8) -> tuple[list[float], list[dict]]:
    """The row of the input embedding matrix for `token_id` and the `k` closest other tokens."""
    table = engine.model.get_input_embeddings().weight            # [vocab, hidden]
    if not 0 <= token_id < table.shape[0]:
        raise InvalidRequest(f"token id {token_id} is outside the vocabulary (0..{table.shape[0] - 1})")
    with engine.lock, torch.inference_mode():
        vector = table[token_id].float()
        rows = table.float() if table.dtype != torch.float32 else table
        cosine = (rows @ vector) / (rows.norm(dim=-1) * vector.norm()).clamp_min(1e-12)
        cosine[token_id] = -2.0                                      # not its own neighbour
        best = torch.topk(cosine, k)
    neighbors = [{"id": int(i), "text": engine.text_of(int(i)), "cosine": float(c)}
                 for i, c in zip(best.indices.tolist(), best.values.tolist())]
    return vector.cpu().tolist(), neighbors
