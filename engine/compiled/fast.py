"""The fast decode path: gpt-fast's recipe inside the hooked engine, in one of two kinds (`kind_for`):
"aoti" on the CPU, a package compiled ahead of time (below), and "graph" on a GPU, the same step
compiled in this process into a CUDA graph per bucket over a persistent cache (engine/compiled/graph.py:
one launch a step; its graphs are recorded and replayed on one thread of their own, main_thread.GRAPH).

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
- The CPU's step runs on the main thread (`main_thread.MainThread` says why), on this path's own copy of
  the model (new modules around the engine's weights), so the engine's hooks never reach it.

The prefill stays eager on a DynamicCache (its maps are captured as before); the first compiled step
copies that cache into a static one (`adopt`).
"""

from __future__ import annotations

import copy
import itertools
import threading
from dataclasses import dataclass

import torch
from transformers import DynamicCache, StaticCache

from engine import environment
from engine.compiled import aoti
from engine.compiled.builds import BUCKETS, Builds
from engine.model import attention
from engine.model.clock import DeviceClock
from engine.host.house import HOUSE
from engine.compiled.main_thread import GRAPH, MAIN

# static cache lengths compiled; a run takes the smallest that holds it, a longer one decodes eagerly.
# The package's one (BUCKETS: ~0.7 GB of prepacked weights in memory, a second would double it), the
# graph path's three (engine/compiled/graph.py: a graph and a persistent cache each, no weights copied)
GRAPH_BUCKETS = (256, 1024, 4096)


def bucket_for(tokens: int, context: int, buckets: tuple[int, ...] = BUCKETS) -> int | None:
    """The smallest static cache length that holds `tokens` (None: longer than every bucket or the context)."""
    return next((b for b in buckets if tokens <= b <= max(context, buckets[0])), None)


def kind_for(device: torch.device) -> str:
    """"graph" (torch.compile in this process, CUDA graphs on a GPU) or "aoti" (the CPU's package)."""
    return environment.fast_kind(torch.device(device).type)


@dataclass
class Step:
    """One compiled decode step's results, still on the device."""
    logits: torch.Tensor                  # [vocab] float32
    began: object                         # DeviceClock marks around the step (in-graph capture included)
    ended: object
    rows: torch.Tensor | None = None      # [layers, heads, max_len] attention rows (watch)
    hidden: tuple | None = None           # embeddings + every layer's output, [1, 1, hidden] each (watch)


class FastPath(Builds):
    """The compiled decode step for one engine's model; `state(variant, bucket)` says how each stands.
    The package is built for BUCKETS[0] only, the graph path for each of GRAPH_BUCKETS the model's
    context reaches (a longer run decodes eagerly); "plain" and "watch" are one graph."""

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
        self.kind = kind_for(device)
        self.buckets = GRAPH_BUCKETS if self.kind == "graph" else BUCKETS
        # a GPU's graphs are recorded and replayed on one thread of their own; the CPU steps on the main thread
        self.runner = GRAPH if self.kind == "graph" and self.device.type == "cuda" else MAIN
        self._steps: dict[int, object] = {}         # bucket -> loaded package, or GraphStep
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
            if not self.ready(variant, bucket) or not self.runner.here():
                return False
            if self.kind == "graph" and (self.in_use or self.compiling):
                return False            # a graph's cache is one run's; a build holds the graph thread
            self.in_use += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.in_use -= 1

    def buckets_for(self, context: int) -> list[int]:
        """The buckets built for a model of `context` tokens (the first, and those the context reaches)."""
        return [b for b in self.buckets if b == self.buckets[0] or b <= context]

    def bucket(self, tokens: int, context: int) -> int | None:
        return bucket_for(tokens, context, self.buckets)

    def describe(self) -> dict:
        """For the status API and the bench: each step's state and what its build measured."""
        return {f"step@{b}": {"state": s, "load_s": round(self.load_s.get(b, 0.0), 2), **self.built.get(b, {})}
                for b, s in sorted(self._state.items())}

    # --- running ------------------------------------------------------------------------------
    def adopt(self, cache: DynamicCache, bucket: int) -> StaticCache:
        """A static cache of `bucket` tokens holding what `cache` holds (the prefill's keys and values): a
        graph's own persistent one, or a new one for the package."""
        if self.kind == "graph":
            return self._steps[bucket].adopt(cache)
        return aoti.static_cache(self.config, bucket, cache)

    def step(self, variant: str, token: int, position: int, cache: StaticCache) -> Step:
        """One compiled decode step, on the runner's thread; the run that asked for it holds the engine's
        lock. Like an eager pass it waits while a back-room job has its turn (engine/host/house.py)."""
        with HOUSE.visitor_pass():
            return self.runner.run(self._step, variant, token, position, cache)

    def _step(self, variant: str, token: int, position: int, cache: StaticCache) -> Step:
        clock = DeviceClock(self.device)
        began = clock.mark()
        if self.kind == "graph":
            logits, rows, hidden = self._steps[cache.layers[0].max_cache_len](token, position)
        else:
            ids = torch.tensor([[token]], device=self.device)
            pos = torch.tensor([position], device=self.device)
            with torch.no_grad():
                logits, rows, hidden = self._steps[cache.layers[0].max_cache_len](ids, pos, *aoti.cache_tensors(cache))
            logits = logits[0].float()
        ended = clock.mark()
        if variant == "plain":
            return Step(logits=logits, began=began, ended=ended)
        return Step(logits=logits, began=began, ended=ended, rows=rows, hidden=tuple(hidden.unbind(0)))


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
