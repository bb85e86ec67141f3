"""What transformers' continuous-batching manager did, step by step, read from its own objects.

The manager runs its loop in a thread of its own: schedule a batch, run the model on it, update the
requests. `Watcher` wraps the processor's `_generation_step` (the forward pass) and, just before it,
reads what the scheduler put in the batch (`requests_in_batch`: each request's query tokens, and
whether it is still prefilling) and what the paged cache holds: each request's block table, the
reference counts of blocks shared by several requests (the allocator's ledger) and the free
capacity. Nothing is recomputed: these are the numbers the library schedules with.

Clocks: the library stamps on time.perf_counter; in the back room the job can stand still while a
visitor runs (engine/host/house.py), so every stamp is turned into work time by subtracting the
pauses counted up to the last reading taken before it (`Clock.work`).
"""

from __future__ import annotations

import bisect
import threading
import time

from engine.model.clock import paused_s
from engine.schema.floor import Frame


class Clock:
    """Work time in ms from an origin, for stamps taken on time.perf_counter."""

    def __init__(self):
        self._lock = threading.Lock()
        self._at: list[float] = []       # perf_counter readings, increasing
        self._paused: list[float] = []   # seconds paused up to each reading
        self.restart()

    def restart(self) -> None:
        """Count from now (the first arrival is due now)."""
        self.origin = 0.0
        self.origin = self.work(self.read())

    def read(self) -> float:
        """A perf_counter stamp, with the pauses so far noted for it."""
        with self._lock:
            now, paused = time.perf_counter(), paused_s()
            self._at.append(now)
            self._paused.append(paused)
            return now

    def work(self, stamp: float) -> float:
        """`stamp` (perf_counter seconds) in work-time ms after the origin."""
        with self._lock:
            i = bisect.bisect_right(self._at, stamp) - 1
            paused = self._paused[i] if i >= 0 else 0.0
        return (stamp - paused) * 1000.0 - self.origin

    def now(self) -> float:
        return self.work(self.read())


class Watcher:
    """Frames of a manager's steps. Install before `manager.start()`."""

    def __init__(self, manager, clock: Clock, lane_of: dict[str, int]):
        # the processor is created here, before the loop starts, so its step can be wrapped; the
        # loop's own `_create_batch_processor` then resets and reuses it
        self.processor = manager._create_batch_processor()
        manager.batch_processor = self.processor
        self.clock, self.lane_of = clock, lane_of
        self.frames: list[Frame] = []
        self.cache = self.processor.cache
        self.allocator = next(iter(self.cache.cache_allocators.values()))
        self.bytes_per_block = int(self.allocator.bytes_per_block)
        self._step = self.processor._generation_step
        self.processor._generation_step = self._watched

    def _watched(self, model) -> None:
        start = self.clock.read()
        batch = [[self.lane_of[f.state.request_id], int(f.query_length), int(f.state.generated_len() == 0)]
                 for f in self.processor.inputs_and_outputs.requests_in_batch]
        tables = [[] for _ in self.lane_of]
        for request, blocks in self.allocator.block_table.items():
            if request in self.lane_of:
                tables[self.lane_of[request]] = [int(b) for b in blocks]
        refs = sorted([int(b), int(n)] for b, n in self.allocator.ledger.shared_ref_counts.items() if n > 1)
        free = int(self.cache.compute_free_capacity(relative=False)) // self.bytes_per_block
        waiting = sorted(self.lane_of[r] for r in self.processor.scheduler.waiting_requests if r in self.lane_of)
        self._step(model)
        end = self.clock.read()
        self.frames.append(Frame(start_ms=self.clock.work(start), end_ms=self.clock.work(end), batch=batch,
                                 tables=tables, refs=refs, free_blocks=free, waiting=waiting))

    def peak_blocks(self) -> int:
        return max((len({b for table in f.tables for b in table}) for f in self.frames), default=0)

    def block_steps(self) -> int:
        return sum(len({b for table in f.tables for b in table}) for f in self.frames)
