"""TTFT against prompt length: the same text, cut to several lengths, one prefill each."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from engine.errors import InvalidRequest
from engine.schema.trace import Settings

if TYPE_CHECKING:        # torch loads with the first run, not with this module (the page starts first)
    from engine.model.core import Engine

LENGTHS = (16, 64, 128, 256, 512)


def prompt_of_length(engine: Engine, text: str, tokens: int) -> str:
    """`text` repeated and cut so that it tokenizes to about `tokens` tokens."""
    unit = engine.encode(text.strip(), templated=True)
    if not unit:
        raise InvalidRequest("the prompt is empty")
    # Encode the repeated text as a whole (so merges across repetitions are the real ones), then cut.
    ids = engine.encode(" ".join([text.strip()] * (tokens // len(unit) + 2)), templated=True)[:tokens]
    return engine.tokenizer.decode(ids)


def ttft_sweep(engine: Engine, text: str, lengths=LENGTHS, use_cache: bool = True,
               cancel: threading.Event | None = None, progress=None) -> list[dict]:
    """One row per length: measured prompt tokens, TTFT and prefill ms (after one warm-up)."""
    if len(lengths) > 12 or any(not 1 <= n <= engine.limits.max_prompt_tokens for n in lengths):
        raise InvalidRequest(f"lengths must be 1..{engine.limits.max_prompt_tokens}, at most 12 of them")
    from engine.run.generate import run_trace
    settings = Settings(max_new_tokens=1, chat_template=False, use_cache=use_cache)
    run_trace(engine, prompt_of_length(engine, text, min(lengths)), settings)   # warm-up
    rows = []
    for i, n in enumerate(lengths):
        if cancel is not None and cancel.is_set():
            break
        if progress is not None:
            progress(i / len(lengths), f"{n} tokens")
        trace = run_trace(engine, prompt_of_length(engine, text, n), settings)
        rows.append({"prompt_tokens": trace.prefill.tokens, "ttft_ms": trace.summary.ttft_ms,
                     "prefill_ms": trace.prefill.ms})
    return rows
