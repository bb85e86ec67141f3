"""The fast decode path: gpt-fast's recipe inside the hooked engine, compiled ahead of time.

- A static KV cache (transformers' `StaticCache`) of a bucketed length, so one compiled step serves
  every run whose prompt and new tokens fit in the bucket; a longer run decodes eagerly.
- The decode step (one token in, the last position's logits out) exported and compiled by
  AOTInductor into a package on disk (engine/compiled/aoti.py): on the CPU frozen weights and Inductor's
  own C++ micro-GEMMs, 1.15-2.3x eager's step here (two draws of the machine). One graph, the watching one (attention rows and
  layer outputs come back as outputs; no hook inside); a run that watches nothing drops them.
- Sampling stays outside the graph (the engine's own `pick`), so every sampling setting works.
- Who pays for the compile: nobody waiting. The app builds the package in the back room
  (engine/host/backroom.py: a child process at the lowest priority, stopped while any visitor's run is
  in progress) and loads it when no run is in progress; a restart finds it on disk and loads it in
  seconds. Until then runs decode eagerly. The CLI, the bench and the tests build in-process
  (`compile_now`). Each trace says which path ran.
- The step runs on the main thread (`main_thread.MainThread` says why), on this path's own copy of
  the model (new modules around the engine's weights), so the engine's hooks never reach it.

The prefill stays eager on a DynamicCache (its maps are captured as before); the first compiled step
copies that cache into a static one (`adopt`).
"""

from __future__ import annotations

import copy
import itertools
import logging
import threading
import time
from dataclasses import dataclass

import torch
from transformers import DynamicCache, StaticCache

from engine.compiled import aoti
from engine.model import attention
from engine.host import backroom
from engine.model.clock import now_ms
from engine.host.house import HOUSE
from engine.compiled.main_thread import MAIN

log = logging.getLogger(__name__)

# static cache lengths compiled; a run takes the smallest that holds it, a longer one decodes eagerly
# (one package is ~0.7 GB of prepacked weights in memory: a second would double it)
BUCKETS = (512,)
BUILD_WAIT_S = 1800.0     # compile_now waits this long for the back room's build (minutes on 2 cores)


def bucket_for(tokens: int, context: int) -> int | None:
    """The smallest static cache length that holds `tokens` (None: longer than every bucket or the context)."""
    return next((b for b in BUCKETS if tokens <= b <= max(context, BUCKETS[0])), None)


@dataclass
class Step:
    """One compiled decode step's results."""
    logits: torch.Tensor                  # [vocab] float32
    ms: float                             # wall time of the step (in-graph capture included)
    rows: torch.Tensor | None = None      # [layers, heads, max_len] attention rows (watch)
    hidden: tuple | None = None           # embeddings + every layer's output, [1, 1, hidden] each (watch)


class FastPath:
    """The compiled decode step for one engine's model; `state(variant, bucket)` says how each stands.
    Only BUCKETS[0] is compiled (a longer run decodes eagerly); "plain" and "watch" are one graph."""

    def __init__(self, model, device: torch.device, model_id: str = ""):
        self.device = device
        self.model_id = model_id
        self.engine_model = model
        attention.register_fast()
        # new modules (no hooks, its own config and kernel name) around the engine's own weight tensors
        shared = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
        self.model = copy.deepcopy(model, shared)
        self.model.set_attn_implementation(attention.FAST_NAME)
        self.config = self.model.config
        self._steps: dict[int, object] = {}         # bucket -> loaded package
        self._state: dict[int, str] = {}            # bucket -> "queued" | "building" | "ready" | "not used: ..." | "failed: ..."
        self.built: dict[int, dict] = {}            # bucket -> what its build measured (aoti sidecar)
        self.load_s: dict[int, float] = {}
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.compiling = 0          # in-process builds in progress (they share this process's cores)
        self.in_use = 0             # runs on a compiled step now

    # --- state --------------------------------------------------------------------------------
    def state(self, variant: str, bucket: int) -> str:
        return self._state.get(bucket, "not compiled")

    def ready(self, variant: str, bucket: int | None) -> bool:
        return bucket in self._steps

    def acquire(self, variant: str, bucket: int | None) -> bool:
        """A run takes a ready step for its decode steps (False: decode eagerly)."""
        with self._lock:
            if not self.ready(variant, bucket) or not MAIN.here():
                return False
            self.in_use += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.in_use -= 1

    def describe(self) -> dict:
        """For the status API and the bench: each step's state and what its build measured."""
        return {f"step@{b}": {"state": s, "load_s": round(self.load_s.get(b, 0.0), 2), **self.built.get(b, {})}
                for b, s in sorted(self._state.items())}

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
        path = self.package(bucket)
        with self._lock:
            self._state[bucket] = "building"
            self.compiling += 1
        try:
            self._use(bucket, path, aoti.ready_meta(self.model, self.engine_model, self.device, bucket, path))
        except Exception as exc:          # a model or backend the compiler cannot take: the eager path stays
            self._failed(bucket, exc)
        finally:
            with self._lock:
                self.compiling -= 1
        return self._state[bucket]

    def build_in_background(self, bucket: int = BUCKETS[0]) -> None:
        """The app's way: load the package if it is on disk; else build it in the back room and
        load it once no visitor's run is in progress. Returns at once."""
        with self._lock:
            if bucket in self._state or (self._worker is not None and self._worker.is_alive()):
                return
            self._state[bucket] = "queued"
            self._worker = threading.Thread(target=self._background, args=(bucket,), name="tbt-compile", daemon=True)
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

    # --- running ------------------------------------------------------------------------------
    def adopt(self, cache: DynamicCache, bucket: int) -> StaticCache:
        """A static cache of `bucket` tokens holding what `cache` holds (the prefill's keys and values)."""
        return aoti.static_cache(self.config, bucket, cache)

    def step(self, variant: str, token: int, position: int, cache: StaticCache) -> Step:
        """One compiled decode step, on the main thread; the run that asked for it holds the engine's
        lock. Like an eager pass it waits while a back-room job has its turn (engine/host/house.py)."""
        with HOUSE.visitor_pass():
            return MAIN.run(self._step, variant, token, position, cache)

    def _step(self, variant: str, token: int, position: int, cache: StaticCache) -> Step:
        ids = torch.tensor([[token]], device=self.device)
        pos = torch.tensor([position], device=self.device)
        with torch.no_grad():
            start = now_ms(self.device)
            logits, rows, hidden = self._steps[cache.layers[0].max_cache_len](ids, pos, *aoti.cache_tensors(cache))
            logits = logits[0].float()
            ms = now_ms(self.device) - start
        if variant == "plain":
            return Step(logits=logits, ms=ms)
        return Step(logits=logits, ms=ms, rows=rows, hidden=tuple(hidden.unbind(0)))


def build_job(engine, progress=None, cancel=None, bucket: int = 512) -> dict:
    """The back-room job (engine/host/backroom.py): build the package of `engine`'s model, unless it is
    on disk already (aoti.ready_meta). Returns its sidecar, with "path"."""
    fast = FastPath(engine.model, engine.device)
    path = aoti.folder() / f"{aoti.key_for(engine.model, engine.device, bucket)}.pt2"
    return {**aoti.ready_meta(fast.model, engine.model, engine.device, bucket, path, progress), "path": str(path)}


def to_dynamic(cache: StaticCache, config) -> DynamicCache:
    """The filled part of a static cache as a DynamicCache (a finished run kept for forking)."""
    n = int(cache.get_seq_length())
    dynamic = DynamicCache(config=config)
    for i, layer in enumerate(cache.layers):
        dynamic.update(layer.keys[:, :, :n].clone(), layer.values[:, :, :n].clone(), i)
    return dynamic
