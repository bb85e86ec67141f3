"""Wall-clock reads that measure work, not kernel launches, nor the time a job stood still.

A back-room job (engine/host/backroom.py) is stopped by signal while a visitor's run is in progress;
its process finds the pause ledger in TBT_PAUSE_LEDGER (engine/host/ledger.Ledger) and every clock read
here leaves the paused time out, so what a lab experiment times is its own work alone. Elsewhere
the ledger is absent and these are plain monotonic reads.
"""

import time

import torch

from engine import environment

_LEDGER = None
if environment.pause_ledger():
    from engine.host.ledger import Ledger
    try:
        _LEDGER = Ledger(environment.pause_ledger())
    except OSError:                  # the server has gone; the job's watchdog ends it soon
        _LEDGER = None


def paused_s() -> float:
    """Seconds this job has stood still so far (0 outside the back room): a stamp taken on
    time.perf_counter by a library is work time once this is subtracted (engine/floor/watch.py)."""
    return _LEDGER.paused_ns() / 1e9 if _LEDGER is not None else 0.0


_paused_s = paused_s


def now_ms(device: torch.device | str | None = None) -> float:
    """Milliseconds on a monotonic clock, after the device has finished queued work."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - _paused_s()) * 1000.0


def work_s() -> float:
    """Seconds on a monotonic clock that stands still while the job does (budgets, durations)."""
    return time.monotonic() - _paused_s()


class DeviceClock:
    """Marks in a device's work without waiting for it: CUDA events on a GPU (their spans are read once
    the work they follow is done, after the step's one host read), the host clock elsewhere."""

    def __init__(self, device: torch.device | str):
        self.cuda = torch.device(device).type == "cuda"

    def mark(self):
        if not self.cuda:
            return now_ms()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def between(self, start, end) -> float:
        """Milliseconds from mark `start` to mark `end` (on a GPU, once `end`'s work is done)."""
        return start.elapsed_time(end) if self.cuda else end - start
