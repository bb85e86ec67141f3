"""The process's main thread as a place to run jobs: the compiled decode path steps there.

No torch here: app.py imports it before the model, to hand its main thread over after launching the
page.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager, nullcontext

# A compiled step takes tens of milliseconds; a worker waits this long for the main thread at most
# (room in the queue and the step together), and COMMIT_WAIT_S more only for a step that is writing
# its result at that moment (a few milliseconds of recording; nothing it does waits).
STEP_WAIT_S = 60.0
COMMIT_WAIT_S = 5.0
# Jobs waiting for the main thread at most. A run asks for a step holding its engine's lock
# (engine/run/generate.py), so each loaded model has one job here at a time, however many runs it
# has in progress (the others wait for the lock as eager runs do): the queue holds one job per model
# with a compiled step, and this is room to spare, not a limit on runs.
MAX_JOBS = 16


class Abandoned(Exception):
    """A step's caller gave up waiting before the step committed its result: it commits nothing."""


class _Job:
    def __init__(self, fn, args):
        self.fn, self.args, self.done = fn, args, Future()
        self.gate = threading.Lock()      # held while the job commits, and by the caller giving up
        self.wanted, self.committed = True, False


class MainThread:
    """Jobs for the process's main thread. Measured here (torch 2.13, CPU, 2 cores): a graph
    compiled on another thread ran no faster than eager (TPOT 42-47 ms), and one compiled on the
    main thread was fast (23-25 ms) only when it ran there too (44 ms on a worker thread). Much of
    that is libgomp: with more OpenMP threads than cores (each thread that runs torch ops holds a
    pool) its threads sleep after ~100 spins, and the step's ~200 parallel regions each pay a
    wake-up; OMP_WAIT_POLICY=ACTIVE (app.py sets it, with a spin limit) brought a worker-driven
    run to 24.8 ms. So the compiled path steps on the main thread: the CLI, the bench and the
    tests are there already; the app's main thread serves these jobs after launching the page
    (`serve`). (It was measured with the just-in-time compiled graph; the AOTInductor package that
    replaced it runs the same OpenMP regions.) Whether, with ACTIVE set, other threads would now
    do as well was not measured.
    """

    def __init__(self, max_jobs: int = MAX_JOBS, own: str | None = None):
        self.jobs: queue.Queue = queue.Queue(maxsize=max_jobs)
        self.serving = False
        self._current: _Job | None = None     # the job the main thread runs now (None: none, or a direct call)
        self._own, self._home, self._started = own, None, threading.Lock()

    def home(self) -> threading.Thread:
        """The thread jobs run on: the process's main thread, or (`own`) a thread of this object's own,
        started on first use (the GPU's graph thread: a CUDA graph is replayed on the thread that
        recorded it, so every step of every run goes there; engine/compiled/graph.py)."""
        if self._own is None:
            return threading.main_thread()
        with self._started:
            if self._home is None:
                self._home = threading.Thread(target=self.serve, name=self._own, daemon=True)
                self._home.start()
                deadline = time.monotonic() + 5.0
                while not self.serving and time.monotonic() < deadline:
                    time.sleep(0.001)
        return self._home

    def here(self) -> bool:
        """Can the calling thread run compiled steps (it is the home thread, or the home thread serves)?"""
        return self._own is not None or self.serving or threading.current_thread() is threading.main_thread()

    def run(self, fn, *args, timeout_s: float | None = None):
        """`fn(*args)` on the main thread; TimeoutError if it has not answered in `timeout_s`
        (STEP_WAIT_S), the wait for room in the queue included. A job not started by then is dropped;
        one that has started commits nothing after it (`committing`), so a step its run gave up on
        never reaches that run's trace; one committing at that moment is waited for (COMMIT_WAIT_S)."""
        if threading.current_thread() is self.home():
            return fn(*args)
        if not self.serving:
            raise RuntimeError("compiled steps run on the main thread, which is not serving them")
        timeout_s = STEP_WAIT_S if timeout_s is None else timeout_s
        job, deadline = _Job(fn, args), time.monotonic() + timeout_s
        try:
            self.jobs.put(job, timeout=timeout_s)
            return job.done.result(timeout=max(0.0, deadline - time.monotonic()))
        except (queue.Full, FutureTimeout):
            if job.gate.acquire(timeout=COMMIT_WAIT_S):   # a job committing now finishes first; then none does
                job.wanted = False
                job.gate.release()
            if job.committed or job.wanted:   # it committed (or still commits) while we gave up: its result stands
                try:
                    return job.done.result(timeout=COMMIT_WAIT_S)
                except FutureTimeout:
                    pass
            job.done.cancel()             # not started yet: the main thread skips it
            raise TimeoutError(f"the main thread did not run a compiled step within {timeout_s:.0f} s") from None

    def committing(self):
        """Around the part of a job that writes what its caller keeps (a step into the trace): on
        the main thread, inside a job whose caller still waits, it holds the job's gate; if the
        caller has given up it raises Abandoned instead. Anywhere else (a direct call, a worker
        thread's eager step) it does nothing."""
        home = threading.main_thread() if self._own is None else self._home
        job = self._current if threading.current_thread() is home else None
        return nullcontext() if job is None else self._gate(job)

    @staticmethod
    @contextmanager
    def _gate(job: _Job):
        with job.gate:
            if not job.wanted:
                raise Abandoned("the step's caller gave up waiting")
            yield
            job.committed = True

    def serve(self, stop: threading.Event | None = None) -> None:
        """Run jobs until `stop` is set (or Ctrl-C); the app's main thread, after launch."""
        assert self._own is not None or threading.current_thread() is threading.main_thread()
        self.serving = True
        try:
            while stop is None or not stop.is_set():
                try:
                    job = self.jobs.get(timeout=0.5)
                except queue.Empty:
                    continue
                if job.done.set_running_or_notify_cancel():
                    self._current = job
                    try:
                        job.done.set_result(job.fn(*job.args))
                    except BaseException as exc:      # handed to the waiting run (if it still waits)
                        job.done.set_exception(exc)
                    finally:
                        self._current = None
        finally:
            self.serving = False


MAIN = MainThread()
GRAPH = MainThread(own="tbt-graph")     # the GPU's compiled steps (engine/compiled/fast.py picks one)
