"""Waiting on a condition, never on "time enough": poll until it holds, fail with what was awaited
once a deadline passes."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout_s: float, what: str, every_s: float = 0.05) -> T:
    """`condition()`'s first true value, polled every `every_s`; AssertionError naming `what` after
    `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout_s} s still waiting for: {what}")
        time.sleep(every_s)
    return value


def inside(thread: threading.Thread, path: str, function: str) -> bool:
    """Whether `thread` is now running (or blocked) in `function` of the file ending in `path`, e.g.
    a run's thread waiting for the engine's lock in engine/model/core.py's forward."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == function and frame.f_code.co_filename.endswith(path):
            return True
        frame = frame.f_back
    return False
