"""How closely a served model agrees with the same model run here: the served tokens fed through
the local model in one forward pass (teacher forcing), so every step is compared on the same
prefix, and a single early disagreement does not make the rest of the two runs incomparable."""

from __future__ import annotations

import torch

from engine.errors import InvalidRequest


def agreement(engine, trace, top: int = 5) -> dict:
    """Top-1 agreement (the served token is the local model's first choice at its position) and
    top-`top` overlap with the server's listed alternatives, over the trace's steps."""
    if trace.served is None or not trace.prompt.tokens:
        raise InvalidRequest("agreement needs a served trace made with a local tokenizer (its prompt ids)")
    prompt = [t.id for t in trace.prompt.tokens]
    served = [s.id for s in trace.steps]
    if not served:
        raise InvalidRequest("the served trace has no tokens")
    ids = torch.tensor([prompt + served], device=engine.model.device)
    with engine.lock, torch.inference_mode():
        logits = engine.model(input_ids=ids, use_cache=False, logits_to_keep=len(served) + 1).logits[0, :-1]
    ranked = logits.topk(top, dim=-1).indices.tolist()        # row i: the local choices for step i
    same = [ranked[i][0] == tok for i, tok in enumerate(served)]
    overlaps = []
    for i, step in enumerate(trace.steps):
        theirs = [c.id for c in step.candidates[:top]]
        if theirs:
            overlaps.append(len(set(theirs) & set(ranked[i][:len(theirs)])) / len(theirs))
    return {"steps": len(served), "top1": sum(same) / len(same),
            f"top{top}_overlap": sum(overlaps) / len(overlaps) if overlaps else None,
            "first_disagreement": next((i for i, ok in enumerate(same) if not ok), None)}
