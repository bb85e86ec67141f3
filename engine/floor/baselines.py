"""The same workload the two ways a server without continuous batching has.

One at a time: `generate` per request, first come first served; a request that arrives while
another runs waits for it. Static batch: the requests wait until the last has arrived, then one
padded `generate` serves them all; a request that ends early still holds its row (and its cache)
until the longest ends. Both stream, so a token's time is when `generate` hands it out (a
`BaseStreamer` stamps each one); both read their KV memory from the cache `generate` returns.
"""

from __future__ import annotations

import threading
import time

import torch
from transformers.generation.streamers import BaseStreamer

from engine.floor.continuous import FloorStopped, generation_config
from engine.floor.watch import Clock
from engine.run.kv_cache import cache_bytes
from engine.schema.floor import FloorSettings, Mode


class Stamps(BaseStreamer):
    """The time of each step's tokens (the first `put` is the prompt); stops `generate` when told."""

    def __init__(self, clock: Clock, stop: threading.Event):
        self.clock, self.stop, self.times, self.prompt_seen = clock, stop, [], False

    def put(self, value) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        if self.stop.is_set():
            raise FloorStopped("the serving-floor run was stopped", "floor_stopped")
        self.times.append(self.clock.now())

    def end(self) -> None:
        pass


def _wait_until(clock: Clock, at_ms: float, stop: threading.Event) -> None:
    while clock.now() < at_ms and not stop.is_set():
        time.sleep(min(0.005, (at_ms - clock.now()) / 1000.0) if at_ms > clock.now() else 0)


def _generated(row: list[int], eos: set[int]) -> list[int]:
    """A row's tokens up to and with its first end token (a static batch pads after it)."""
    for i, t in enumerate(row):
        if t in eos:
            return row[:i + 1]
    return row


@torch.inference_mode()
def one_at_a_time(engine, inputs, arrival_s, s: FloorSettings, stop: threading.Event) -> tuple[Mode, list]:
    """Returns the mode and each request's own tokens (what continuous batching must equal).
    `arrival_s` is in arrival order (engine/floor/workload.arrivals)."""
    config, clock = generation_config(engine, s.new_tokens), Clock()
    ttft, e2el, tokens, peak, last = [], [], [], 0, 0.0
    for prompt, at in zip(inputs, arrival_s):
        _wait_until(clock, at * 1000.0, stop)
        stamps = Stamps(clock, stop)
        out = engine.model.generate(torch.tensor([prompt], device=engine.device), generation_config=config,
                                    streamer=stamps)
        tokens.append(_generated(out.sequences[0, len(prompt):].tolist(), engine.eos_ids))
        last = stamps.times[len(tokens[-1]) - 1]
        ttft.append(stamps.times[0] - at * 1000.0)
        e2el.append(last - at * 1000.0)
        peak = max(peak, cache_bytes(out.cache))
    mode = Mode(wall_ms=last - arrival_s[0] * 1000.0, tokens=sum(len(t) for t in tokens), ttft_ms=ttft,
                e2el_ms=e2el, memory_bytes=peak, memory_note="one request")
    return mode, tokens


@torch.inference_mode()
def static_batch(engine, inputs, arrival_s, s: FloorSettings, stop: threading.Event) -> Mode:
    config, clock = generation_config(engine, s.new_tokens), Clock()
    width, pad = max(len(p) for p in inputs), config.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in inputs], device=engine.device)      # padded left
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in inputs], device=engine.device)
    _wait_until(clock, max(arrival_s) * 1000.0, stop)
    stamps = Stamps(clock, stop)
    out = engine.model.generate(ids, attention_mask=mask, generation_config=config, streamer=stamps)
    rows = [_generated(r, engine.eos_ids) for r in out.sequences[:, width:].tolist()]
    return Mode(wall_ms=stamps.times[-1] - min(arrival_s) * 1000.0, tokens=sum(len(r) for r in rows),
                ttft_ms=[stamps.times[0] - a * 1000.0 for a in arrival_s],
                e2el_ms=[stamps.times[len(r) - 1] - a * 1000.0 for r, a in zip(rows, arrival_s)],
                memory_bytes=cache_bytes(out.cache), memory_note="the padded batch")
