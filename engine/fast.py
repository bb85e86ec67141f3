"""The fast decode path: gpt-fast's recipe inside the hooked engine.

- A static KV cache (transformers' `StaticCache`) of a bucketed length, so one compiled graph serves
  every run whose prompt and new tokens fit in the bucket; a longer run takes the next bucket.
- The decode step (one token in, the last position's logits out) compiled with `torch.compile`,
  `fullgraph=True`, static shapes. On the CPU Inductor freezes the weights and picks, by measuring,
  its own C++ micro-GEMM or MKL for each matmul (max-autotune); at batch 1 its kernels read the fp32
  weights about twice as fast as eager's MKL GEMV. On CUDA: "reduce-overhead" (CUDA graphs), which
  takes away the launch cost that bounds a small model there.
- Sampling stays outside the graph (the engine's own `pick`), so every sampling setting works.
- Watching is a second graph, not a hook: its attention function appends each layer's newest
  attention row to a list the step returns, and the decoder layers' outputs (for the logit lens)
  come back as the step's hidden states. Nothing is registered per call inside the compiled step.
- Graphs compile on this path's own copy of the model (its modules are new, its weights the
  engine's tensors), so the engine's hooks and kernel switches never reach it. They compile and
  run on the main thread (`main_thread.MainThread` says why); in the app a scheduler thread
  queues them there after start-up and between compiled runs, and runs use the eager path until
  the graph they need is ready. Each trace says which path ran.
- Inductor's on-disk cache is TBT_COMPILE_CACHE (default ~/.cache/token-by-token/inductor, set in
  engine/__init__.py): the C++ kernel builds and the autotuning results persist (a graph's
  compile: 145 s on an empty cache, 111 s on the same cache warm). The compiled graph itself
  cannot be kept: Inductor's FX graph cache refuses a graph holding the mkldnn-packed weights
  ("mkldnn tensors unpickleable", torch 2.13), and without the packing (`cpp.weight_prepack=False`)
  a graph loads from it in 22 s but steps in 42 ms instead of 22 (no C++ micro-GEMMs). So each
  start compiles its graphs again.

The prefill stays eager on a DynamicCache (its maps are captured as before); the first compiled step
copies that cache into a static one (`adopt`).
"""

from __future__ import annotations

import copy
import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass

import torch
from transformers import DynamicCache, StaticCache

from . import attention
from .clock import now_ms
from .main_thread import MAIN

log = logging.getLogger(__name__)

BUCKETS = (512, 1024, 2048, 4096)     # static cache lengths; a run takes the smallest that holds it


def enabled_by_env(default: bool = True) -> bool:
    """TBT_COMPILE=0 turns the background compile off (the tests' app does: it would take both cores)."""
    value = os.environ.get("TBT_COMPILE", "").strip().lower()
    return default if not value else value not in ("0", "off", "false", "no")


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
    """Compiled decode steps for one engine's model; `state(variant, bucket)` says how each stands."""

    def __init__(self, model, device: torch.device):
        self.device = device
        self.on_cuda = device.type == "cuda"
        attention.register_fast()
        # new modules (no hooks, its own config and kernel name) around the engine's own weight tensors
        shared = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
        self.model = copy.deepcopy(model, shared)
        self.model.set_attn_implementation(attention.FAST_NAME)
        self.config = self.model.config
        self._states: dict[tuple[str, int], str] = {}   # "queued" | "compiling" | "ready" | "failed: ..."
        self.compile_s: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()
        self._queue: list[tuple[str, int]] = []
        self._worker: threading.Thread | None = None
        model = self.model

        # the model is reached through a closure, not passed in: Inductor then sees its weights as
        # the module's parameters and can freeze and prepack them (passed as an argument they are
        # plain inputs, and the step was barely faster than eager)
        def plain(ids, pos, cache):
            return _plain_step(model, ids, pos, cache)

        def watch(ids, pos, cache):
            return _watch_step(model, ids, pos, cache)

        self._fns = {"plain": self._compile(plain), "watch": self._compile(watch)}
        self._primed = False
        self.compiling = 0          # graphs being compiled (or about to be): runs now go eager
        self.in_use = 0             # runs on a compiled graph now

    def _compile(self, fn):
        if self.on_cuda:
            return torch.compile(fn, mode="reduce-overhead", fullgraph=True, dynamic=False)
        import torch._inductor.config as inductor
        # Set on the config module, process-wide (only this path compiles): given as `options=`
        # instead, the graph came out frozen but as slow as eager (TPOT 45 ms against 25 ms). No
        # FX graph cache: it refuses a graph with mkldnn-packed weights anyway (module docstring).
        inductor.freezing = True
        inductor.max_autotune = True
        inductor.max_autotune_gemm_backends = "CPP,ATEN"
        inductor.fx_graph_cache = False
        return torch.compile(fn, fullgraph=True, dynamic=False)

    # --- state --------------------------------------------------------------------------------
    def state(self, variant: str, bucket: int) -> str:
        return self._states.get((variant, bucket), "not compiled")

    def ready(self, variant: str, bucket: int | None) -> bool:
        return bucket is not None and self._states.get((variant, bucket)) == "ready"

    def acquire(self, variant: str, bucket: int | None) -> bool:
        """A run takes a ready graph for its decode steps (False: decode eagerly). Not while a
        compile runs or waits to: it holds the main thread for a minute or two."""
        with self._lock:
            if self.compiling or not self.ready(variant, bucket) or not MAIN.here():
                return False
            self.in_use += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.in_use -= 1

    def describe(self) -> dict:
        """For the status API and the bench: each graph's state and compile time."""
        return {f"{v}@{b}": {"state": s, "compile_s": round(self.compile_s.get((v, b), 0.0), 1)}
                for (v, b), s in sorted(self._states.items())}

    # --- compiling ----------------------------------------------------------------------------
    def compile_now(self, variant: str, bucket: int) -> str:
        """Compile one graph (a dummy step on a cache of its own) and return its state."""
        key = (variant, bucket)
        with self._lock:
            if self._states.get(key) == "ready":
                return "ready"
            self._states[key] = "compiling"
            self.compiling += 1
        start = time.perf_counter()
        try:
            with torch.no_grad():
                if variant == "watch" and not self._primed:
                    # transformers' output recording sets itself up under a lock on its first call
                    # with output_hidden_states, which a fullgraph trace cannot enter: do it once eagerly
                    self.model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=self.device),
                               output_hidden_states=True, **{attention.ROWS: []})
                    self._primed = True
                cache = StaticCache(config=self.config, max_cache_len=bucket)
                self.model(input_ids=torch.zeros((1, 2), dtype=torch.long, device=self.device), cache=cache,
                           cache_position=torch.arange(2, device=self.device), use_cache=True, logits_to_keep=1)
                self._inputs(cache)
                for position in (2, 3):        # CUDA graphs record on the second call
                    self._fns[variant](torch.zeros((1, 1), dtype=torch.long, device=self.device),
                                       torch.tensor([position], device=self.device), cache)
            state = "ready"
        except Exception as exc:          # a model or backend the compiler cannot take: the eager path stays
            log.warning("compiling the %s decode step (bucket %d) failed: %s", variant, bucket, exc)
            state = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        finally:
            with self._lock:
                self.compiling -= 1
        self.compile_s[key] = time.perf_counter() - start
        self._states[key] = state
        return state

    def compile_in_background(self, *keys: tuple[str, int], delay_s: float = 0.0) -> None:
        """Queue graphs to compile on the main thread when it serves (the app); a scheduler thread
        waits `delay_s` first (a page starting up has the cores), then for the compiled runs in
        progress to end. Already queued or compiled graphs are skipped. Without a serving main
        thread the graphs stay queued (`compile_now` compiles on the caller's thread)."""
        with self._lock:
            for key in keys:
                if key not in self._states and key not in self._queue:
                    self._queue.append(key)
                    self._states[key] = "queued"
            if self._queue and (self._worker is None or not self._worker.is_alive()):
                self._worker = threading.Thread(target=self._schedule, args=(delay_s,), name="tbt-compile",
                                                daemon=True)
                self._worker.start()

    def _schedule(self, delay_s: float) -> None:
        time.sleep(delay_s)
        while True:
            while not MAIN.serving:
                time.sleep(0.5)
            with self._lock:
                if not self._queue:
                    return
                key = self._queue.pop(0)
                self.compiling += 1      # from here new runs decode eagerly
            try:
                while self.in_use:       # compiled runs in progress finish first (they need the main thread)
                    time.sleep(0.2)
                MAIN.run(self.compile_now, *key)
            finally:
                with self._lock:
                    self.compiling -= 1

    # --- running ------------------------------------------------------------------------------
    def adopt(self, cache: DynamicCache, bucket: int) -> StaticCache:
        """A static cache of `bucket` tokens holding what `cache` holds (the prefill's keys and values)."""
        static = StaticCache(config=self.config, max_cache_len=bucket)
        for i, layer in enumerate(cache.layers):
            static.update(layer.keys, layer.values, i)
        return self._inputs(static)

    def _inputs(self, cache: StaticCache) -> StaticCache:
        """StaticCache marks its tensors as static addresses (for CUDA graphs). With Inductor's freezing
        on the CPU, a static-address tensor is folded into the graph like a weight: the graph would then
        read the cache it was compiled with, whatever cache a run passes. On the CPU the marks go."""
        if not self.on_cuda:
            for layer in cache.layers:
                for t in (layer.keys, layer.values, layer.cumulative_length):
                    if hasattr(t, "_dynamo_static_input_type"):
                        del t._dynamo_static_input_type
        return cache

    def step(self, variant: str, token: int, position: int, cache: StaticCache) -> Step:
        """One compiled decode step, on the main thread; the caller holds the engine's lock."""
        return MAIN.run(self._step, variant, token, position, cache)

    def _step(self, variant: str, token: int, position: int, cache: StaticCache) -> Step:
        ids = torch.tensor([[token]], device=self.device)
        pos = torch.tensor([position], device=self.device)
        with torch.no_grad():
            start = now_ms(self.device)
            logits, rows, hidden = self._fns[variant](ids, pos, cache)
            if self.on_cuda:          # CUDA graphs overwrite their outputs on the next replay
                logits, rows = logits.clone(), None if rows is None else rows.clone()
                hidden = None if hidden is None else tuple(h.clone() for h in hidden)
            logits = logits[0].float()
            ms = now_ms(self.device) - start
        return Step(logits=logits, ms=ms, rows=rows, hidden=hidden)


def to_dynamic(cache: StaticCache, config) -> DynamicCache:
    """The filled part of a static cache as a DynamicCache (a finished run kept for forking)."""
    n = int(cache.get_seq_length())
    dynamic = DynamicCache(config=config)
    for i, layer in enumerate(cache.layers):
        dynamic.update(layer.keys[:, :, :n].clone(), layer.values[:, :, :n].clone(), i)
    return dynamic


def _plain_step(model, ids, pos, cache):
    out = model(input_ids=ids, cache=cache, cache_position=pos, position_ids=pos[None], use_cache=True,
                logits_to_keep=1)
    return out.logits[:, -1], None, None


def _watch_step(model, ids, pos, cache):
    rows: list[torch.Tensor] = []
    out = model(input_ids=ids, cache=cache, cache_position=pos, position_ids=pos[None], use_cache=True,
                logits_to_keep=1, output_hidden_states=True, **{attention.ROWS: rows})
    return out.logits[:, -1], torch.stack(rows), out.hidden_states
