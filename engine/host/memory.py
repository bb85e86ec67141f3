"""Memory handed back to the system once the house is quiet (no torch here).

glibc's malloc keeps what a process frees in its arenas, one per thread that allocated (up to 8 a
core), and gives it back to the system only from the top of each heap. A run allocates and frees
many mid-sized blocks on Gradio's worker threads (token lists, candidates, packed attention, JSON
text), so RSS climbs on memory no object holds any more. `malloc_trim(0)` returns the free pages
of every arena. It runs after the last visitor's run ends, on a thread of its own (it takes a few
milliseconds on this heap and holds each arena's lock while it works), at most one at a time.
TBT_MALLOC_TRIM=0 turns it off; on a libc without malloc_trim (musl, macOS) it does nothing.

TBT_MALLOC_ARENAS=n caps the arenas (`mallopt(M_ARENA_MAX, n)`, what MALLOC_ARENA_MAX does when
glibc starts): the app sets it first thing, before Gradio's and torch's threads take arenas of
their own; a MALLOC_ARENA_MAX the host set itself wins.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time

from engine import environment

_busy = threading.Lock()
trims = 0                        # trims done in this process (for /status and the soak)
trim_ms = 0.0                    # their time together
arenas: int | None = None        # the arena cap set at start (None: glibc's own)
M_ARENA_MAX = -8                 # glibc's malloc.h


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        return libc
    except (OSError, AttributeError):
        return None


LIBC = _libc()


def trim() -> bool:
    """Give the free pages of every malloc arena back to the system now (True if it could)."""
    global trims, trim_ms
    if LIBC is None:
        return False
    start = time.perf_counter()
    LIBC.malloc_trim(0)
    trims, trim_ms = trims + 1, trim_ms + (time.perf_counter() - start) * 1000
    return True


def limit_arenas() -> int | None:
    """Cap glibc's arenas at TBT_MALLOC_ARENAS (call before threads start); returns the cap in force."""
    global arenas
    host = os.environ.get("MALLOC_ARENA_MAX", "")
    if host.isdigit():                          # glibc read the host's own at start
        arenas = int(host)
        return arenas
    cap = environment.malloc_arenas()
    if LIBC is not None and cap and LIBC.mallopt(M_ARENA_MAX, cap) == 1:
        arenas = cap
    return arenas


def after_runs() -> None:
    """The house went quiet: trim on a thread of its own, unless one is trimming already."""
    if LIBC is None or not environment.malloc_trim() or not _busy.acquire(blocking=False):
        return

    def work():
        try:
            trim()
        finally:
            _busy.release()
    threading.Thread(target=work, daemon=True, name="tbt-malloc-trim").start()


def describe() -> dict:
    return {"malloc_trim": LIBC is not None and environment.malloc_trim(), "trims": trims,
            "trim_ms": round(trim_ms, 1), "malloc_arenas": arenas}
