"""Normal and reasoning mode on the same prompt, side by side on the one engine.

The two runs step in turn: one decode step of the normal run, one of the reasoning run, and so
on, so both columns of the page grow together. Each run keeps its own honest clock (see
generate.py): its TTFT, TPOT and time to first answer count only its own forward passes and
sampling, while the time it spent waiting for the other run's passes is stored apart as
`wait_ms`. So each column reports what that mode costs when it runs alone, although on the wall
clock they took turns.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Iterator

from engine.schema.trace import Settings, Trace

if TYPE_CHECKING:        # torch loads with the first run, not with this module (the page starts first)
    from engine.model.core import Engine


def settings_pair(budget: int, answer_tokens: int, attention: bool = False) -> tuple[Settings, Settings]:
    """Normal: `answer_tokens` at most. Reasoning: up to `budget` thinking tokens, then the answer.
    `attention` also captures attention and the logit lens of the normal run."""
    budget, answer_tokens = int(budget), int(answer_tokens)
    return (Settings(max_new_tokens=answer_tokens, attention=attention, logit_lens=attention),
            Settings(max_new_tokens=budget + answer_tokens, mode="reasoning", thinking_budget=budget))


def interleave(engine: Engine, prompt: str, budget: int, answer_tokens: int,
               cancel: threading.Event | None = None,
               attention: bool = False) -> Iterator[tuple[Trace, Trace, bool]]:
    """Step both runs in turn; yields (normal trace, reasoning trace, finished) after each round.
    Both requests are checked (InvalidRequest) before either run starts."""
    from engine.run.generate import stream_trace
    normal, reasoning = settings_pair(budget, answer_tokens, attention)
    runs = [stream_trace(engine, prompt, normal, cancel), stream_trace(engine, prompt, reasoning, cancel)]
    traces: list[Trace | None] = [None, None]
    live = [True, True]
    try:
        while any(live):
            for i, run in enumerate(runs):
                if live[i]:
                    try:
                        traces[i] = next(run).trace
                    except StopIteration:
                        live[i] = False
            yield traces[0], traces[1], not any(live)
    finally:
        for run in runs:
            run.close()
