"""The process's main thread as a place to run jobs: the compiled decode path steps there.

No torch here: app.py imports it before the model, to hand its main thread over after launching the
page.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

# A compiled step takes tens of milliseconds; a worker waits this long for the main thread at most.
STEP_WAIT_S = 60.0


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

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.serving = False

    def here(self) -> bool:
        """Can the calling thread run compiled steps (it is the main thread, or the main thread serves)?"""
        return self.serving or threading.current_thread() is threading.main_thread()

    def run(self, fn, *args, timeout_s: float = STEP_WAIT_S):
        """`fn(*args)` on the main thread; TimeoutError if it has not answered in `timeout_s` (a job
        not started by then is dropped: its run goes on without it)."""
        if threading.current_thread() is threading.main_thread():
            return fn(*args)
        if not self.serving:
            raise RuntimeError("compiled steps run on the main thread, which is not serving them")
        done: Future = Future()
        self.jobs.put((fn, args, done))
        try:
            return done.result(timeout=timeout_s)
        except FutureTimeout:
            done.cancel()                 # not started yet: the main thread skips it
            raise TimeoutError(f"the main thread did not run a compiled step within {timeout_s:.0f} s") from None

    def serve(self, stop: threading.Event | None = None) -> None:
        """Run jobs until `stop` is set (or Ctrl-C); the app's main thread, after launch."""
        assert threading.current_thread() is threading.main_thread()
        self.serving = True
        try:
            while stop is None or not stop.is_set():
                try:
                    fn, args, done = self.jobs.get(timeout=0.5)
                except queue.Empty:
                    continue
                if done.set_running_or_notify_cancel():
                    try:
                        done.set_result(fn(*args))
                    except BaseException as exc:      # handed to the waiting run
                        done.set_exception(exc)
        finally:
            self.serving = False


MAIN = MainThread()
