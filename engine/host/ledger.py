"""The pause ledger: how long the house's jobs have stood still, shared with their child processes.

The house (engine/host/house.py) writes it as it stops and continues its jobs; a back-room child
maps the same file (TBT_PAUSE_LEDGER) and its clocks (engine/model/clock.py) leave the pauses out.
No torch here.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
import time


class Ledger:
    """How long the house's jobs have stood still, in a 24-byte file that child processes map:
    nanoseconds of finished pauses, the start of the pause in progress (0: none), pauses so far.
    All on CLOCK_MONOTONIC (time.monotonic_ns), the clock engine/model/clock.py reads."""

    FORMAT = "<qqq"
    SIZE = struct.calcsize(FORMAT)

    def __init__(self, path: str | None = None):
        if path is None:
            fd, path = tempfile.mkstemp(prefix="tbt-pauses-")
            os.write(fd, bytes(self.SIZE))
            os.close(fd)
            self.owner = True
        else:
            self.owner = False
        self.path = path
        with open(path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), self.SIZE)

    def _read(self) -> tuple[int, int, int]:
        while True:                 # a writer may be half-way: read until two reads agree
            first = struct.unpack_from(self.FORMAT, self._map)
            if struct.unpack_from(self.FORMAT, self._map) == first:
                return first

    def _write(self, done: int, since: int, count: int) -> None:
        struct.pack_into(self.FORMAT, self._map, 0, done, since, count)

    def pause_begins(self) -> None:
        done, since, count = self._read()
        if not since:
            self._write(done, time.monotonic_ns(), count + 1)

    def pause_ends(self) -> None:
        done, since, count = self._read()
        if since:
            self._write(done + time.monotonic_ns() - since, 0, count)

    def paused_ns(self) -> int:
        """Nanoseconds spent paused up to now (a pause in progress counted to now)."""
        done, since, _ = self._read()
        return done + (time.monotonic_ns() - since if since else 0)

    @property
    def pauses(self) -> int:
        return self._read()[2]

    def close(self) -> None:
        self._map.close()
        if self.owner:
            try:
                os.unlink(self.path)
            except OSError:
                pass
