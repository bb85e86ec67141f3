"""Building the compiled decode step for a FastPath (engine/compiled/fast.py): the CPU's package, in the
back room or in this process, loaded once no visitor's run is in progress; or a GPU's graphs, compiled
in this process on the graph thread (engine/compiled/graph.py), one bucket after another."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager

from engine.compiled import aoti
from engine.compiled.graph import GraphStep
from engine.host import backroom
from engine.host.house import HOUSE

log = logging.getLogger("engine.compiled.fast")

BUCKETS = (512,)          # the package's static cache lengths (fast.py says why one)
BUILD_WAIT_S = 1800.0     # compile_now waits this long for the back room's build (minutes on 2 cores)


class Builds:
    """FastPath's building half: fills its `_steps`, `_state`, `built` and `load_s`."""

    def package(self, bucket: int):
        return aoti.folder() / f"{aoti.key_for(self.engine_model, self.device, bucket)}.pt2"

    # --- building and loading -----------------------------------------------------------------
    def compile_now(self, variant: str = "watch", bucket: int = BUCKETS[0]) -> str:
        """Build the package in this process unless it is on disk, load it, and return its state."""
        worker = self._worker
        if worker is not None and worker.is_alive():       # one build of a package at a time
            worker.join(BUILD_WAIT_S)
            if worker.is_alive():                          # a build that hangs: say so, do not start another
                log.warning("the back room's build of the compiled step is still going after %d s", BUILD_WAIT_S)
                return self._state.get(bucket, "building")
        if bucket in self._steps:
            return "ready"
        if self.kind == "graph":
            return self.runner.run(self._graph, bucket, timeout_s=BUILD_WAIT_S)
        path = self.package(bucket)
        with self._building(bucket):
            self._use(bucket, path, aoti.ready_meta(self.model, self.engine_model, self.device, bucket, path))
        return self._state[bucket]

    @contextmanager
    def _building(self, bucket: int):
        """Around an in-process build: counted in `compiling` (runs beside it say their times suffer);
        a model or backend the compiler cannot take leaves the bucket failed and the eager path on."""
        with self._lock:
            self._state[bucket] = "building"
            self.compiling += 1
        try:
            yield
        except Exception as exc:
            self._failed(bucket, exc)
        finally:
            with self._lock:
                self.compiling -= 1

    def build_in_background(self, bucket: int = BUCKETS[0]) -> None:
        """The app's way: load the package if it is on disk; else build it in the back room and
        load it once no visitor's run is in progress (a graph: compiled in this process, on its
        thread, after the buckets queued before it). Returns at once."""
        with self._lock:
            if bucket in self._state or (self.kind == "aoti" and self._worker is not None and self._worker.is_alive()):
                return
            self._state[bucket] = "queued"
            if self.kind == "graph":        # from now until it is built, runs decode eagerly (FastPath.acquire)
                self.compiling += 1
            target = self._background if self.kind == "aoti" else self._graph_background
            self._worker = threading.Thread(target=target, args=(bucket,), name="tbt-compile", daemon=True)
            self._worker.start()

    def _background(self, bucket: int) -> None:
        try:
            path = self.package(bucket)
            meta = aoti.read_meta(path)
            if meta is None or "why" not in meta or meta.get("pays_at") != aoti.pays() or \
                    (meta.get("use") and not path.exists()) or \
                    (not meta.get("final", True) and path.exists()):     # build it, or time it again
                self._state[bucket] = "building"
                meta = backroom.call("compile", f"the decode step, {bucket}-token static cache", "engine.compiled.fast:build_job",
                                     {"bucket": bucket}, model=self.model_id, deadline_s=2 * BUILD_WAIT_S)
                meta.pop("path", None)
            # a load holds the interpreter for ~0.5 s in all: when no visitor's run is in progress, or,
            # if runs keep coming, in a turn of its own (their passes wait: the most a run waits for it)
            HOUSE.quiet(timeout=HOUSE.hold_s)
            with HOUSE.turn(), HOUSE.job("compile", "loading the compiled decode step", holds_s=0.6):
                self._use(bucket, path, meta)
        except Exception as exc:
            self._failed(bucket, exc)

    def _graph_background(self, bucket: int) -> None:
        """A graph is compiled on the thread that replays every bucket's steps: a step queued behind a
        compile would wait for it. So no run takes the graph path from the moment a build is queued
        (`compiling`), and the build starts once the runs that took it have ended."""
        try:
            deadline = time.monotonic() + BUILD_WAIT_S
            while (self.in_use or not self.runner.here()) and time.monotonic() < deadline:
                time.sleep(0.1)                 # (the CPU's main thread serves once the page is up)
            HOUSE.quiet(timeout=HOUSE.hold_s)
            with HOUSE.job("compile", f"compiling the decode step's graph, {bucket}-token cache", holds_s=0.0):
                self.runner.run(self._graph, bucket, timeout_s=BUILD_WAIT_S)
        except Exception as exc:
            self._failed(bucket, exc)
        finally:
            with self._lock:
                self.compiling -= 1

    def _graph(self, bucket: int) -> str:
        """Compile and check the graph of `bucket` (engine/compiled/graph.py) on this thread; use it if
        its check passed, else say what differed (the engine stays eager). Returns its state."""
        with self._building(bucket):
            graph = GraphStep(self.model, self.device, bucket)
            meta = self.built[bucket] = graph.build()
            log.info("the decode step's graph for %d tokens: %s", bucket, meta)
            with self._lock:
                if meta["same_tokens"]:
                    self._steps[bucket], self._state[bucket] = graph, "ready"
                else:
                    self._state[bucket] = f"not used: {meta['why']}"
        return self._state[bucket]

    def _use(self, bucket: int, path, meta: dict) -> None:
        self.built[bucket] = {k: meta[k] for k in ("compile_s", "eager_ms", "compiled_ms", "ratio", "pays_at",
                                                   "same_tokens", "why", "final") if k in meta}
        if not meta.get("use"):          # the package was deleted (engine/compiled/verdict.py): eager
            self._state[bucket] = f"not used: {meta.get('why') or aoti.verdict(meta)[1]}"
            return
        start = time.perf_counter()
        step = aoti.load(path)
        self.load_s[bucket] = time.perf_counter() - start
        with self._lock:
            self._steps[bucket] = step
            self._state[bucket] = "ready"

    def _failed(self, bucket: int, exc: Exception) -> None:
        log.warning("the compiled decode step (bucket %d) is not available: %s", bucket, exc)
        self._state[bucket] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
