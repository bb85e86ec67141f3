"""One host, many visitors: the house's own heavy work yields to every visitor's run.

Heavy work is compiling the fast decode path, a lab experiment, the reasoning evaluation and a
load sweep. Each runs as a *job* registered here, and visitors' runs (`run_begins`/`run_ends`,
called by every run of the engine and of a served model) decide when a job may use the machine:

- A job in a child process (engine/host/backroom.py) is stopped with SIGSTOP, its whole process group
  (a compiler's gcc included), the moment a visitor's run begins, and continued with SIGCONT when
  the last run ends. The visitor waits for a signal, not for the job, and shares no core, cache or
  memory bandwidth with it. The child's clock leaves out the time it stood still (the `Ledger`,
  read by engine/model/clock.py), so what a lab experiment times is still its own work alone.
- A job in this process (the load sweep's streams) cannot be stopped from outside: it is told.
  `interrupted` is set while visitors run; the sweep drops the wave in flight, waits for
  `quiet()` and measures that wave again.

Why not yield between timed windows in one process (the first idea)? A window is a whole
forward pass: an eager prefill of 2,048 tokens is seconds, and a visitor's TTFT is ~0.3 s, so a
run that waits for one window is already several times slower. A stopped process yields at once.

No torch here: the app imports this before the model loads.
"""

from __future__ import annotations

import mmap
import os
import signal
import struct
import tempfile
import threading
import time
from contextlib import contextmanager

from engine.host import memory


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


class Job:
    """Heavy work the house runs. `kind` is "compile", "lab", "evaluation" or "load_sweep";
    `what` says it in a few words. A child-process job pauses by signal (`pgid`); an in-process
    one through `interrupted`. `holds_s` is the most a visitor's run waits for it: 0 for a job that
    yields at once."""

    def __init__(self, kind: str, what: str, pgid: int | None = None, holds_s: float = 0.0):
        self.kind, self.what, self.pgid, self.holds_s = kind, what, pgid, holds_s
        self.started = time.monotonic()
        self.paused = False
        self.pauses = 0                      # times it stood still for visitors
        self.runs_between = 0                # visitor runs that began while it ran
        self.redone = 0                      # in-process jobs: pieces dropped and measured again
        self.interrupted = threading.Event()  # in-process jobs: set while visitors run

    def pause(self) -> None:
        self.paused, self.pauses = True, self.pauses + 1
        self.interrupted.set()
        if self.pgid is not None:
            _signal_group(self.pgid, signal.SIGSTOP)

    def resume(self) -> None:
        self.paused = False
        self.interrupted.clear()
        if self.pgid is not None:
            _signal_group(self.pgid, signal.SIGCONT)

    def describe(self) -> dict:
        return {"kind": self.kind, "what": self.what, "seconds": round(time.monotonic() - self.started, 1),
                "paused": self.paused, "pauses": self.pauses, "visitor_runs_between": self.runs_between,
                "redone": self.redone,
                "holds_a_run_at_most_s": self.holds_s}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass                               # the job has ended meanwhile


class House:
    """The visitors' runs in progress and the jobs that yield to them (one per process: HOUSE)."""

    def __init__(self):
        self._lock = threading.Condition()
        self.runs = 0               # visitor runs in progress
        self.jobs: list[Job] = []
        self._ledger: Ledger | None = None

    @property
    def ledger(self) -> Ledger:
        """The pause ledger child jobs read (created with the first job)."""
        with self._lock:
            if self._ledger is None:
                self._ledger = Ledger()
            return self._ledger

    # --- visitors -----------------------------------------------------------------------------
    def run_begins(self) -> None:
        with self._lock:
            self.runs += 1
            for job in self.jobs:
                job.runs_between += 1
            if self.runs == 1 and self.jobs:
                self.ledger.pause_begins()
                for job in self.jobs:
                    job.pause()

    def run_ends(self) -> None:
        with self._lock:
            self.runs = max(0, self.runs - 1)
            if self.runs == 0:
                for job in self.jobs:
                    job.resume()
                if self._ledger is not None:
                    self._ledger.pause_ends()
                self._lock.notify_all()
                memory.after_runs()         # the runs' freed memory back to the system

    @contextmanager
    def visitor_run(self):
        """Around one visitor's run: the house's jobs stand still until it ends."""
        self.run_begins()
        try:
            yield
        finally:
            self.run_ends()

    def quiet(self, timeout: float | None = None) -> bool:
        """Wait until no visitor's run is in progress (True), or `timeout` seconds (False)."""
        with self._lock:
            return self._lock.wait_for(lambda: self.runs == 0, timeout)

    # --- jobs ---------------------------------------------------------------------------------
    def add(self, job: Job) -> Job:
        with self._lock:
            self.jobs.append(job)
            if self.runs:                  # visitors are running: it starts stopped
                self.ledger.pause_begins()
                job.pause()
        return job

    def remove(self, job: Job) -> None:
        with self._lock:
            if job in self.jobs:
                self.jobs.remove(job)

    @contextmanager
    def job(self, kind: str, what: str, pgid: int | None = None, holds_s: float = 0.0):
        """A job registered for as long as the block runs."""
        job = self.add(Job(kind, what, pgid, holds_s))
        try:
            yield job
        finally:
            self.remove(job)

    def describe(self) -> dict:
        """For /status and the page: visitors' runs in progress and each job's state."""
        with self._lock:
            return {"visitor_runs": self.runs, "jobs": [j.describe() for j in self.jobs]}


HOUSE = House()
