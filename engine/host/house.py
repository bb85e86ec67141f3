"""One host, many visitors: the house's own heavy work yields to every visitor's run.

Heavy work is compiling the fast decode path, a lab experiment, the reasoning evaluation and a
load sweep. Each runs as a *job* registered here, and visitors' runs (`run_begins`/`run_ends`,
called by every run of the engine and of a served model) decide when a job may use the machine:

- A job in a child process (engine/host/backroom.py) is stopped with SIGSTOP, its whole process group
  (a compiler's gcc included), the moment a visitor's run begins, and continued with SIGCONT when
  the last run ends. The visitor waits for a signal, not for the job, and shares no core, cache or
  memory bandwidth with it. The child's clock leaves out the time it stood still (the `Ledger`,
  read by engine/model/clock.py), so what a lab experiment times is still its own work alone.
- A turn: while visitors' runs never stop (two clients back to back), a stopped job would never
  end, and its lab or floor group would hold every visitor after it. So a job that has stood still
  HOLD seconds (TBT_BACKROOM_HOLD_S, 6) gets the machine for TURN seconds (TBT_BACKROOM_TURN_S, 4):
  visitors' next passes wait at `visitor_pass` (the passes in flight end first), the job is
  continued, then stopped again: 40 % of the machine while runs keep coming (a run alone that is
  shorter than HOLD never meets a turn). A run waits one turn at most, and says so in its step's
  wait time. The job measures alone in its turn: a pass still in flight after DRAIN_S (a long
  prefill) gives the turn up, and the next is tried HOLD seconds later.
- A job in this process (the load sweep's streams) cannot be stopped from outside: it is told.
  `interrupted` is set while visitors run; the sweep drops the wave in flight, waits for
  `quiet()` and measures that wave again.

Why not yield between timed windows in one process (the first idea)? A window is a whole
forward pass: an eager prefill of 2,048 tokens is seconds, and a visitor's TTFT is ~0.3 s, so a
run that waits for one window is already several times slower. A stopped process yields at once.

No torch here: the app imports this before the model loads.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager

from engine import environment
from engine.host import memory
from engine.host.ledger import Ledger

DRAIN_S = 5.0       # a turn waits this long at most for the visitors' passes in flight to end


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
        self.turns = 0                       # turns it had while visitors kept running
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
                "redone": self.redone, "turns": self.turns,
                "holds_a_run_at_most_s": self.holds_s}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass                               # the job has ended meanwhile


class House:
    """The visitors' runs in progress and the jobs that yield to them (one per process: HOUSE)."""

    def __init__(self, hold_s: float | None = None, turn_s: float | None = None):
        self._lock = threading.Condition()
        self.runs = 0               # visitor runs in progress
        self.passes = 0             # visitor passes in progress (`visitor_pass`)
        self.jobs: list[Job] = []
        self._ledger: Ledger | None = None
        found = environment.backroom_turn()
        self.hold_s, self.turn_s = hold_s or found[0], turn_s or found[1]
        self.turn_on = False        # a turn of the house's own: visitors' next passes wait
        self.stood_since: float | None = None    # since when the child jobs stand still (None: they run)
        self._retry_at = 0.0        # a turn given up (a pass in flight): the next waits hold_s from here
        self._keeper: threading.Thread | None = None

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
            if self.runs == 1 and self.jobs and not self.turn_on:    # in a turn: stopped when it ends
                self._pause_all()

    def run_ends(self) -> None:
        with self._lock:
            self.runs = max(0, self.runs - 1)
            if self.runs == 0:
                self._resume_all()
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

    @contextmanager
    def visitor_pass(self):
        """Around one pass of a visitor's run: it waits while the house has a turn (a turn's length
        and its drain at most), and a turn waits for it to end."""
        with self._lock:
            self._lock.wait_for(lambda: not self.turn_on, self.turn_s + DRAIN_S)
            self.passes += 1
        try:
            yield
        finally:
            with self._lock:
                self.passes -= 1
                self._lock.notify_all()

    def quiet(self, timeout: float) -> bool:
        """Wait until no visitor's run is in progress (True), or `timeout` seconds (False)."""
        with self._lock:
            return self._lock.wait_for(lambda: self.runs == 0, timeout)

    @contextmanager
    def turn(self):
        """The machine for the house's own work while visitors run: their next passes wait, those in
        flight end first (DRAIN_S at most). One turn at a time (a turn's length at most, then it goes).
        Yields whether it is alone: False when a pass outlasted DRAIN_S (`_give_turn` then gives it up)."""
        with self._lock:
            self._lock.wait_for(lambda: not self.turn_on, self.turn_s + DRAIN_S)
            self.turn_on = True
            alone = self._lock.wait_for(lambda: self.passes == 0, DRAIN_S)
        try:
            yield alone
        finally:
            with self._lock:
                self.turn_on = False
                self._lock.notify_all()

    # --- the child jobs' turns ----------------------------------------------------------------
    def _pause_all(self) -> None:
        self.ledger.pause_begins()
        for job in self.jobs:
            job.pause()
        self.stood_since = time.monotonic()

    def _resume_all(self) -> None:
        for job in self.jobs:
            job.resume()
        if self._ledger is not None:
            self._ledger.pause_ends()
        self.stood_since = None

    def _keep_turns(self) -> None:
        """A thread while child jobs exist: each time they have stood still `hold_s`, a turn."""
        while True:
            with self._lock:
                if not any(j.pgid is not None for j in self.jobs):
                    self._keeper = None
                    return
                since = self.stood_since
                if since is None or time.monotonic() - max(since, self._retry_at) < self.hold_s:
                    self._lock.wait(0.2)
                    continue
            self._give_turn()

    def _give_turn(self) -> None:
        with self.turn() as alone:
            with self._lock:
                if self.stood_since is None:          # the runs ended meanwhile: the jobs run already
                    return
                if not alone:                         # a pass outlasted the drain: not beside it; later
                    self._retry_at = time.monotonic()
                    return
                children = [j for j in self.jobs if j.pgid is not None]
                self._resume_all()
                for job in children:
                    job.turns += 1
                self._lock.wait_for(lambda: not any(j in self.jobs for j in children), self.turn_s)
                if self.runs and self.jobs:           # visitors still run: the jobs stand still again
                    self._pause_all()

    # --- jobs ---------------------------------------------------------------------------------
    def add(self, job: Job) -> Job:
        with self._lock:
            self.jobs.append(job)
            if self.runs and not self.turn_on:     # visitors are running: it starts stopped
                self.ledger.pause_begins()
                job.pause()
                self.stood_since = self.stood_since or time.monotonic()
            if job.pgid is not None and self._keeper is None:
                self._keeper = threading.Thread(target=self._keep_turns, daemon=True, name="tbt-house-turns")
                self._keeper.start()
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
            return {"visitor_runs": self.runs, "jobs": [j.describe() for j in self.jobs], "turn": self.turn_on,
                    "hold_s": self.hold_s, "turn_s": self.turn_s}


HOUSE = House()
