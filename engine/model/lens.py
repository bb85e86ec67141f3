"""The logit lens, off the run's clock: which token each layer's output would give if it were the last layer.

A run keeps only what the lens needs (`keep_hidden`): every decoder layer's hidden state at the
newest position but the last layer's, [layers - 1, hidden] float32 (29 x 576 x 4 = 67 KB a step
for SmolLM2-135M). That is a copy, not arithmetic. The lens itself is the final norm and the LM
head over those states: layers x vocab x hidden multiply-adds (1.6 GFLOP a step here, six times
the model's own forward pass). It is computed when someone looks at a step (`step_lens`), and for
every step at once when the trace leaves the server (`exported`: a downloaded file carries the
lens and no hidden states, so it shows the lens without a model). Batched over steps, the head's
113 MB are read once per block of steps instead of once per step.

The last layer's guess is the model's own output: the step's top candidate, already computed.
`lens_in_loop` is the former in-the-loop computation, kept as the reference the tests hold the
deferred one to (same top guesses but at a near tie, probabilities within 1e-4: tests/numerics.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from engine.model.hooks import Capture, final_norm
from engine.run.sampling import shortest32
from engine.schema.trace import Hidden, LensGuess, Step, Trace

ROWS_PER_BLOCK = 256     # hidden states projected per matmul at export: [vocab, 256] float32 is 50 MB


def keep_hidden(capture: Capture) -> Hidden:
    """What the loop keeps of a pass for the lens: the captured last-position states, stacked."""
    stacked = torch.stack([capture.hidden[i] for i in sorted(capture.hidden)])   # [layers - 1, hidden]
    data = stacked.detach().float().cpu().numpy().astype("<f4", copy=False).tobytes()
    return Hidden(shape=list(stacked.shape), data=data)


class KeptStates:
    """The states a run keeps, up to the host's byte cap (Limits.lens_max_bytes); past it the run keeps
    none and its observation says from which step (the lens chart says so for those steps)."""

    def __init__(self, trace: Trace, max_bytes: int):
        self.trace, self.max_bytes, self.bytes = trace, max_bytes, 0

    def full(self) -> bool:
        o = self.trace.observation
        return o is not None and o.lens_capped_at is not None

    def keep(self, capture: Capture) -> Hidden | None:
        return None if self.full() else self.kept(keep_hidden(capture))

    def keep_array(self, states: np.ndarray) -> Hidden | None:
        """`keep` for states already read to the host ([layers - 1, hidden] float32: the compiled path)."""
        if self.full():
            return None
        return self.kept(Hidden(shape=list(states.shape), data=states.astype("<f4", copy=False).tobytes()))

    def kept(self, hidden: Hidden) -> Hidden | None:
        o = self.trace.observation
        self.bytes += len(hidden.data)
        if self.bytes > self.max_bytes:
            if o is not None:
                o.lens_capped_at = len(self.trace.steps)
            return None
        return hidden


def hidden_array(hidden: Hidden) -> np.ndarray:
    """A kept block as [layers - 1, hidden] float32 (validate() has checked its size for a file)."""
    return np.frombuffer(hidden.data, dtype="<f4").reshape(hidden.shape)


def top_guesses(engine, hidden: torch.Tensor) -> tuple[list[int], torch.Tensor]:
    """hidden: [n, hidden_size] states -> each one's top token through the final norm and the LM head,
    and that token's probability (float32 tensor [n]).

    The norm and a quantized head run through their `forward`, not as a call of the module: a call
    runs the module's hooks, and the hooks on a shared model belong to whichever pass holds the
    engine's lock (another visitor's profile times the final norm). The lens is arithmetic on the
    modules' weights, not a pass; it runs without the lock, so it must not meet a pass's hooks."""
    head, norm = engine.model.get_output_embeddings(), final_norm(engine.model)
    at = head.weight.device           # a sharded model (device_map="auto") spreads layers over GPUs
    dtype = next(norm.parameters(), head.weight).dtype
    normed = norm.forward(hidden.to(next(norm.parameters(), head.weight).device, dtype)).to(at)
    # [vocab, hidden] @ [hidden, n]: MKL runs this orientation of a thin matmul 2-3x faster on
    # the CPU than the [n, hidden] @ [hidden, vocab] one.
    if head.weight.is_floating_point():
        logits = torch.matmul(head.weight, normed.T).float()                   # [vocab, n]
        if getattr(head, "bias", None) is not None:
            logits = logits + head.bias.float()[:, None]
    else:                             # a quantized head: let its own module do the matmul
        logits = head.forward(normed).float().T
    logits = final_logits(engine.model, logits)
    top, ids = logits.max(dim=0)
    return ids.tolist(), torch.exp(top - torch.logsumexp(logits, dim=0))   # softmax of the top guess alone


def final_logits(model, logits: torch.Tensor) -> torch.Tensor:
    """What the model itself does to its LM head's output before it returns logits: Granite divides
    by `logits_scaling`, Cohere multiplies by `logit_scale`, Gemma 2 soft-caps at
    `final_logit_softcapping`. Without it the lens's probabilities would not be the model's."""
    cfg = model.config.get_text_config()
    if scale := getattr(cfg, "logits_scaling", None):
        logits = logits / scale
    if scale := getattr(cfg, "logit_scale", None):
        logits = logits * scale
    if cap := getattr(cfg, "final_logit_softcapping", None):
        logits = torch.tanh(logits / cap) * cap
    return logits


def _guesses(engine, ids: list[int], p: list[float], last: LensGuess) -> list[LensGuess]:
    return [LensGuess(layer=i, id=t, text=engine.text_of(t), p=q) for i, (t, q) in enumerate(zip(ids, p))] + [last]


def _last_layer(step: Step, layer: int) -> LensGuess:
    """The last layer's guess: the model's own top candidate (candidates are in logit order)."""
    top = step.candidates[0]
    return LensGuess(layer=layer, id=top.id, text=top.text, p=top.p_model)


def usable(engine, trace: Trace) -> bool:
    """Whether `engine` can compute the lens of `trace`'s kept states: the same model and shapes."""
    m, i = trace.model, engine.info
    return (m.id, m.layers, m.hidden_size, m.vocab_size) == (i.id, i.layers, i.hidden_size, i.vocab_size)


def step_lens(engine, step: Step) -> list[LensGuess] | None:
    """One step's lens from its kept states (its stored lens if it has one; None without either)."""
    if step.lens is not None or step.hidden is None or not step.candidates:
        return step.lens
    with torch.inference_mode():
        ids, p = top_guesses(engine, torch.from_numpy(hidden_array(step.hidden).copy()))
    return _guesses(engine, ids, shortest32(p), _last_layer(step, len(ids)))


def with_step_lens(engine, trace: Trace, index: int) -> Trace:
    """`trace` with step `index`'s lens filled in (in place: the caller's copy), when it can be."""
    if 0 <= index < len(trace.steps) and usable(engine, trace):
        step = trace.steps[index]
        step.lens = step_lens(engine, step)
    return trace


def steps_lens(engine, steps: list[Step]) -> list[list[LensGuess] | None]:
    """Every step's lens, the kept states of many steps projected together (ROWS_PER_BLOCK rows a matmul)."""
    todo = [i for i, st in enumerate(steps) if st.lens is None and st.hidden is not None and st.candidates]
    out = [st.lens for st in steps]
    if not todo:
        return out
    per = steps[todo[0]].hidden.shape[0]
    block = max(1, ROWS_PER_BLOCK // max(per, 1))
    with torch.inference_mode():
        for start in range(0, len(todo), block):
            chunk = todo[start:start + block]
            rows = np.concatenate([hidden_array(steps[i].hidden) for i in chunk])      # [len(chunk) * per, hidden]
            ids, p = top_guesses(engine, torch.from_numpy(rows))
            p = shortest32(p)
            for k, i in enumerate(chunk):
                part = slice(k * per, (k + 1) * per)
                out[i] = _guesses(engine, ids[part], p[part], _last_layer(steps[i], per))
    return out


def exported(engine, trace: Trace) -> Trace:
    """The trace as it leaves the server: every step's lens computed (when `engine` is its model),
    its branches' steps too, the kept hidden states dropped. The run's own object is left as it was."""
    if not any(st.hidden is not None for st in trace.steps + [st for b in trace.branches for st in b.steps]):
        return trace
    ok = usable(engine, trace)

    def done(steps: list[Step]) -> list[Step]:
        lenses = steps_lens(engine, steps) if ok else [st.lens for st in steps]
        return [dataclasses.replace(st, lens=lens, hidden=None) for st, lens in zip(steps, lenses)]
    return dataclasses.replace(trace, steps=done(trace.steps),
                               branches=[dataclasses.replace(b, steps=done(b.steps)) for b in trace.branches])


def lens_in_loop(engine, capture: Capture, final_logits: torch.Tensor) -> list[LensGuess]:
    """The lens as the loop used to compute it, inside each step: the captured states and the
    model's own final logits (the reference for the deferred lens; not called by a run)."""
    with torch.inference_mode():
        hidden = torch.stack([capture.hidden[i] for i in sorted(capture.hidden)])
        ids, p = top_guesses(engine, hidden)
        logits = final_logits.float()
        top = int(logits.argmax())
        last_p = torch.exp(logits[top] - torch.logsumexp(logits, dim=0))[None]
        values = shortest32(torch.cat([p, last_p.to(p.device)]))
    return _guesses(engine, ids, values[:-1], LensGuess(layer=len(ids), id=top, text=engine.text_of(top),
                                                        p=values[-1]))
