"""The decode step both compiled paths run: one token in; the last position's logits, every layer's
attention row for it and every layer's output (the logit lens's input) out. The watching is inside
the step: the attention rows come from the engine's fast attention function (engine/model/attention.py
FAST_NAME), the layer outputs from transformers' own `output_hidden_states`.

Two ways the step meets its static KV cache, one step:
- the CPU's AOTInductor package (engine/compiled/aoti.py) is exported with the cache's tensors as
  inputs (an exported program takes tensors, not a cache object) and rebuilds the cache around them;
- the graph path (engine/compiled/graph.py) compiles it with `torch.compile` over one persistent
  cache whose tensors never move (the CUDA graph replays over fixed addresses).
"""

from __future__ import annotations

import torch

from engine.model import attention


def watched_step(model, ids: torch.Tensor, pos: torch.Tensor, cache) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ids [1, 1], pos [1] (the new token's position) -> (logits [1, vocab], attention rows
    [layers, heads, bucket], hidden states [layers + 1, 1, 1, hidden]); `cache` is written in place."""
    rows: list[torch.Tensor] = []
    out = model(input_ids=ids, cache=cache, cache_position=pos, position_ids=pos[None], use_cache=True,
                logits_to_keep=1, output_hidden_states=True, **{attention.ROWS: rows})
    return out.logits[:, -1], torch.stack(rows), torch.stack(out.hidden_states)


def prime(model, device) -> None:
    """transformers' output recording sets itself up under a lock on its first call with
    output_hidden_states, which a trace cannot enter: do it once eagerly."""
    with torch.no_grad():
        model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=device), output_hidden_states=True,
              **{attention.ROWS: []})
