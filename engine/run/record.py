"""What a run leaves behind: the Trace it starts, the Step each new token becomes, the attention rows
it keeps and the Summary over its steps. One builder for a local run (engine/run/generate.py), a
fork's branch (engine/run/fork.py) and a served completion (engine/served/client.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from dataclasses import dataclass
from datetime import datetime, timezone

import torch

from engine.model.core import Engine
from engine.model.hooks import Capture
from engine.model.tokens import prompt_tokens
from engine.run.kv_cache import cache_bytes
from engine.run.reasoning import reasoning_on
from engine.run.sampling import Choice
from engine.schema.packed import PackedRows
from engine.schema.trace import Attention, Hidden, LensGuess, Observation, Prompt, Settings, Step, Summary, Trace


@dataclass
class Event:
    kind: str       # "tokens" | "prefill" | "step" | "done"
    trace: Trace


def last_of(events: Generator[Event, None, Trace]) -> Trace:
    """A run's (or a branch's) finished Trace: its events' generator run to the end."""
    while True:
        try:
            next(events)
        except StopIteration as done:
            return done.value


@dataclass
class Seen:
    """One new token as observed after sampling (Run.observe)."""
    token: int
    raw: bytes
    text: str
    phase: str
    forced: bool
    choice: Choice
    hidden: Hidden | None        # what the logit lens needs (engine/model/lens.py computes it later)


def ms3(ms: float) -> float:
    """Milliseconds kept to the microsecond: finer digits are clock noise and cost trace bytes."""
    return round(ms, 3)


def new_trace(engine: Engine, prompt: str, templated: str, ids: list[int], settings: Settings) -> Trace:
    """The trace of a run about to start: the model, the settings, the prompt's tokens, how it is watched."""
    return Trace(
        model=engine.info, settings=settings,
        prompt=Prompt(raw=prompt, templated=templated, tokens=prompt_tokens(engine.token_bytes, templated, ids),
                      raw_token_count=len(engine.encode(prompt, templated=True))),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), run_id=uuid.uuid4().hex[:12],
        reasoning=engine.thinking_style if reasoning_on(settings) else None,
        observation=Observation(kernel=engine.kernel(Capture(attention=settings.attention)),
                                attention=engine.capture_via if settings.attention else None,
                                logit_lens=settings.logit_lens))


@dataclass
class Clocks:
    """One step's time, split three ways (engine/run/generate.py says why): the model's own `ms`
    (of which `forward_ms` is the pass), watching and waiting; `t_ms` is the model's clock at its end."""
    ms: float
    t_ms: float
    forward_ms: float = 0.0
    observe_ms: float = 0.0
    wait_ms: float = 0.0


def make_step(index: int, token_id: int, label: str, raw: bytes, text: str, choice: Choice, clocks: Clocks,
              kv_tokens: int, kv_bytes: int, phase: str = "answer", forced: bool = False,
              lens: list[LensGuess] | None = None, hidden: Hidden | None = None) -> Step:
    """The Step of one new token: what was chosen among which candidates, when, and the cache after it."""
    return Step(
        index=index, id=token_id, token=label, text=text, bytes_hex=raw.hex(), phase=phase, forced=forced,
        ms=ms3(clocks.ms), t_ms=ms3(clocks.t_ms), forward_ms=ms3(clocks.forward_ms),
        observe_ms=ms3(clocks.observe_ms), wait_ms=ms3(clocks.wait_ms),
        candidates=choice.candidates, chosen_rank=choice.rank, chosen_p_model=choice.p_model,
        chosen_p_final=choice.p_final, entropy=choice.entropy, entropy_model=choice.entropy_model,
        kept_tokens=choice.kept_tokens, kept_mass=choice.kept_mass, kv_tokens=kv_tokens, kv_bytes=kv_bytes, lens=lens,
        hidden=hidden)


class AttentionRows:
    """The attention a run keeps: the prefill's capped maps, then one row per decode step per layer
    and head, until the host's byte cap (Limits.attention_max_bytes); after it, capture stops."""

    def __init__(self, trace: Trace, on: bool, max_bytes: int):
        self.trace, self.on, self.max_bytes, self.bytes = trace, on, max_bytes, 0

    def keep(self, capture: Capture, keys: int | None = None) -> None:
        """`keys`: the positions this pass's query could see. A sliding-window layer's cache holds
        only the newest of them, so its row is shorter: it is placed at the end, the positions
        that have left its window get probability 0."""
        if not capture.attention:
            return
        if self.trace.attention is None:      # the prefill pass: its capped maps come first
            n = self.trace.prefill.tokens
            self.trace.attention = Attention(
                prefill_tokens=capture.map_tokens, prefill_capped=n > capture.map_tokens, steps=[],
                prefill=[PackedRows.pack(capture.maps[i].cpu().numpy()) for i in sorted(capture.maps)])
        per_layer = [capture.rows[i] for i in sorted(capture.rows)]
        keys = max([keys or 0] + [r.shape[-1] for r in per_layer])
        per_layer = [torch.nn.functional.pad(r, (keys - r.shape[-1], 0)) for r in per_layer]
        stacked = torch.stack([r.to(per_layer[0].device) for r in per_layer])  # [layers, heads, keys]
        self.keep_array(stacked.cpu().numpy())

    def keep_array(self, stacked) -> None:
        """A decode step's rows already read to the host ([layers, heads, keys] float32: the compiled path)."""
        if not self.on:
            return
        attention = self.trace.attention
        rows = PackedRows.pack(stacked)
        self.bytes += rows.nbytes
        if self.bytes > self.max_bytes:
            attention.steps_capped_at = len(attention.steps)
            self.on = False
            return
        attention.steps.append(rows)


def summarize(steps: list[Step], reason: str, cache, empty_e2e: float, wall_ms: float | None = None) -> Summary:
    """A run's figures over the steps it generated, all on the model's clock (`empty_e2e` when it
    generated none); watching and waiting summed apart."""
    n = len(steps)
    e2e = steps[-1].t_ms if steps else empty_e2e
    ttft = steps[0].t_ms if steps else None
    return Summary(
        ttft_ms=ttft, tpot_ms=(e2e - ttft) / (n - 1) if n > 1 else None, e2e_ms=e2e,
        tokens_per_s=n / e2e * 1000 if e2e > 0 else 0.0, new_tokens=n, stop_reason=reason,
        kv_bytes_final=cache_bytes(cache),
        answer_tokens=sum(st.phase == "answer" for st in steps),
        thinking_tokens=sum(st.phase == "thinking" for st in steps),
        time_to_first_answer_ms=next((st.t_ms for st in steps if st.phase == "answer" and not st.forced), None),
        observe_ms=ms3(sum(st.observe_ms for st in steps)), wait_ms=ms3(sum(st.wait_ms for st in steps)),
        wall_ms=wall_ms)
