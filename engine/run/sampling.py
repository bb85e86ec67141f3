"""Choosing the next token: transformers' own logits warpers, a seeded generator, and the
numbers a person wants to see (top candidates, probabilities before/after, rank, entropy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import (LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper,
                          TopPLogitsWarper)

from engine.schema.trace import Candidate, Settings


def warpers(temperature: float, top_k: int, top_p: float) -> LogitsProcessorList:
    """Temperature, then top-k, then top-p: the order `model.generate` applies them in."""
    chain = LogitsProcessorList()
    if temperature > 0 and temperature != 1.0:
        chain.append(TemperatureLogitsWarper(float(temperature)))
    if top_k > 0:
        chain.append(TopKLogitsWarper(int(top_k)))
    if top_p < 1.0:
        chain.append(TopPLogitsWarper(float(top_p)))
    return chain


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """Entropy in nats (a float32 tensor, on the device) of a distribution given as log-probabilities
    (-inf entries count as 0)."""
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum()


@dataclass
class Choice:
    token_id: int
    candidates: list[Candidate]
    rank: int
    p_model: float
    p_final: float
    entropy: float
    entropy_model: float
    kept_tokens: int | None = None
    kept_mass: float | None = None


def choose(logits: torch.Tensor, settings: Settings, chain: LogitsProcessorList, input_ids: torch.Tensor,
           generator: torch.Generator | None, force: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The model's own choice, all that `generate` would do: warp the scores and sample (or take
    the top one). Returns the token (a 0-d tensor on the logits' device: nothing is read to the host)
    and the log-probabilities it was sampled from (None when greedy or forced: all the probability
    sits on the one token). `force` names a token the engine inserts instead (budget forcing); the
    RNG is then left untouched. logits: [vocab] float32."""
    if force is not None:
        return torch.full((), int(force), dtype=torch.long, device=logits.device), None
    if settings.temperature == 0:                        # greedy: the top score wins outright
        return torch.argmax(logits), None
    warped = chain(input_ids, logits[None])[0]           # filtered tokens become -inf
    logp_final = torch.log_softmax(warped, dim=-1)
    return torch.multinomial(logp_final.exp(), 1, generator=generator)[0], logp_final


def pick(logits: torch.Tensor, settings: Settings, chain: LogitsProcessorList, input_ids: torch.Tensor,
         generator: torch.Generator | None, force: int | None = None) -> tuple[int, torch.Tensor | None]:
    """`choose`, with the token read as an int."""
    token, logp_final = choose(logits, settings, chain, input_ids, generator, force)
    return int(token), logp_final


HEAD = 8        # choice_tensor's figures before its candidates


def choice_tensor(logits: torch.Tensor, token: torch.Tensor, logp_final: torch.Tensor | None,
                  settings: Settings) -> torch.Tensor:
    """What a person wants to see of a choice, as one float32 tensor on the logits' device: [token,
    rank, p_model, p_final, entropy, entropy of the model's own distribution, kept tokens, kept mass
    (NaN: not sampled)] then the top candidates' ids, logits, p_model and p_final (`read_choice` reads
    it). Token ids and counts are exact in float32 (below 2**24). Watching, not generating: the run
    clocks it as observation."""
    logp_model = torch.log_softmax(logits, dim=-1)
    # no value goes from the host to the device here either (a blocking copy waits for the device too):
    # constants are filled on the device, the token is gathered, not used as an index
    at = token.view(1)
    kept_tokens = kept_mass = torch.full((), float("nan"), device=logits.device)
    if logp_final is not None:          # sampled: what the real cut left, over the whole vocabulary
        kept = torch.isfinite(logp_final)
        before_p = warpers(settings.temperature, settings.top_k, 1.0)(torch.zeros((1, 1), dtype=torch.long),
                                                                      logits[None].clone())[0]
        kept_tokens = kept.sum().float()
        kept_mass = torch.where(kept, torch.softmax(before_p, dim=-1), 0.0).sum()
    else:
        logp_final = torch.full_like(logits, float("-inf")).index_fill_(0, at, 0.0)
    top = torch.topk(logits, min(settings.top_candidates, logits.numel()))
    head = torch.stack([token.float(), (logits > logits.gather(0, at)).sum().float(), logp_model.gather(0, at)[0].exp(),
                        logp_final.gather(0, at)[0].exp(), _entropy(logp_final), _entropy(logp_model), kept_tokens,
                        kept_mass])
    return torch.cat([head, top.indices.float(), top.values, logp_model[top.indices].exp(),
                      logp_final[top.indices].exp()]).float()


def read_choice(flat: np.ndarray, text_of) -> Choice:
    """A Choice from `choice_tensor`'s values, read to the host (float32, any length past the choice's)."""
    k = (len(flat) - HEAD) // 4
    ids = [int(i) for i in flat[HEAD:HEAD + k]]
    values, pm, pf = (_short(flat[HEAD + k * j:HEAD + k * (j + 1)]) for j in (1, 2, 3))
    head = _short(flat[:HEAD])
    sampled = not np.isnan(flat[7])
    return Choice(token_id=int(flat[0]), candidates=[Candidate(id=i, text=text_of(i), logit=v, p_model=a, p_final=b)
                                                     for i, v, a, b in zip(ids, values, pm, pf)],
                  rank=int(flat[1]), p_model=head[2], p_final=head[3], entropy=max(0.0, head[4]),
                  entropy_model=max(0.0, head[5]), kept_tokens=int(flat[6]) if sampled else None,
                  kept_mass=head[7] if sampled else None)


def describe(logits: torch.Tensor, token: int, logp_final: torch.Tensor | None, settings: Settings,
             text_of) -> Choice:
    """`choice_tensor` read to the host at once."""
    token_t = torch.full((), int(token), dtype=torch.long, device=logits.device)
    return read_choice(choice_tensor(logits, token_t, logp_final, settings).cpu().numpy(), text_of)


def _short(values: np.ndarray) -> list[float]:
    return [float(x) for x in values.astype(np.float32).astype(str)]


def shortest32(values: torch.Tensor) -> list[float]:
    """float32 values as the shortest decimals that read back as the same float32 (0.42950624, not
    0.42950624227523804): nothing the model computed is lost, and the trace is ~8 bytes a number
    smaller than with float64 digits that were never there."""
    return [float(x) for x in values.detach().float().cpu().numpy().astype(str)]


def playground(candidates: list[Candidate], temperature: float, top_k: int, top_p: float,
               seed: int = 0) -> list[dict]:
    """Re-run temperature -> top-k -> top-p on one step's stored candidates, stage by stage.

    Only the stored top candidates are known, so every stage is renormalised over them; the
    caller shows how much of the model's probability they hold (sum of `p_model`).
    """
    logits = torch.tensor([[c.logit for c in candidates]], dtype=torch.float32)   # [1, n]
    ids = torch.zeros((1, 1), dtype=torch.long)                                    # unused by warpers
    if temperature == 0:                                # greedy: every stage keeps only the top score
        onehot = torch.zeros_like(logits)
        onehot[0, int(logits.argmax())] = 1.0
        stages, kept_k, kept_p = [onehot] * 3, onehot[0] > 0, onehot[0] > 0
    else:
        scaled = warpers(temperature, 0, 1.0)(ids, logits.clone())
        after_k = warpers(1.0, top_k, 1.0)(ids, scaled.clone())
        after_p = warpers(1.0, 0, top_p)(ids, after_k.clone())
        stages = [torch.softmax(x, dim=-1) for x in (scaled, after_k, after_p)]
        kept_k, kept_p = torch.isfinite(after_k[0]), torch.isfinite(after_p[0])
    final = stages[-1][0]
    generator = torch.Generator().manual_seed(int(seed))
    chosen = int(final.argmax()) if temperature == 0 else int(torch.multinomial(final, 1, generator=generator))
    before = torch.softmax(logits, dim=-1)[0]
    return [{"id": c.id, "text": c.text, "logit": c.logit, "p_model": float(before[i]),
             "p_model_true": c.p_model, "p_temperature": float(stages[0][0, i]),
             "p_top_k": float(stages[1][0, i]), "p_top_p": float(stages[2][0, i]),
             "kept_top_k": bool(kept_k[i]), "kept_top_p": bool(kept_p[i]), "chosen": i == chosen}
            for i, c in enumerate(candidates)]
