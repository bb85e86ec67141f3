"""Jobs for tests/unit/test_house.py to run in the back room (engine/host/backroom.py imports them by name)."""

import os
import time

from engine.model.clock import work_s
from engine.errors import InvalidRequest


def busy(progress=None, cancel=None, seconds: float = 3.0) -> dict:
    """Work for `seconds` of its own clock (pauses left out), or until cancelled."""
    wall, start, steps = time.monotonic(), work_s(), 0
    while work_s() - start < seconds:
        if cancel.is_set():
            return {"cancelled": True, "steps": steps}
        sum(range(20_000))
        steps += 1
        if steps % 50 == 0:
            progress(min(1.0, (work_s() - start) / seconds), f"step {steps}")
    return {"cancelled": False, "work_s": work_s() - start, "wall_s": time.monotonic() - wall,
            "nice": os.nice(0), "sched_idle": os.sched_getscheduler(0) == os.SCHED_IDLE, "pgid": os.getpgid(0),
            "io_idle": __import__("psutil").Process().ionice().ioclass == 3,
            "pid": os.getpid()}


def refuses(progress=None, cancel=None) -> dict:
    raise InvalidRequest("no such experiment")


def not_numbers(progress=None, cancel=None) -> dict:
    """A measurement that divided by zero."""
    return {"ratio": float("nan"), "points": [1.0, float("inf")], "steps": 3}
