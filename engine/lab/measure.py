"""How the lab measures: warm-up, repeats, median and spread; peak memory of one pass; cleanup.

Every number the lab reports is the median of `repeats` timed runs after a warm-up run, with the
min, max and all runs kept next to it, so a reader can see how noisy the machine was.

What the clock sees: only forward passes. Everything else a measurement needs (tokenizing, building
input tensors, switching the attention kernel, loading a model copy, taking the engine's lock) is
done before the clock starts, so it cannot be mistaken for model work. And every experiment times
inside `engine.exclusive(...)`: no visitor's run shares the machine while the clock runs.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Callable

import torch
from transformers import DynamicCache

from engine.model.clock import now_ms, work_s
from engine.model.core import switched_kernel


class Stopped(Exception):
    """Raised between runs when the visitor pressed Stop; the experiment keeps what it measured."""


@dataclass
class Steps:
    """Progress and cancellation for one experiment: `tick` before each run reports how far it is
    and raises Stopped when the cancel flag is set."""
    progress: Callable[[float, str], None] | None
    cancel: threading.Event | None
    total: int
    done: int = 0

    def tick(self, text: str) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Stopped
        if self.progress is not None:
            self.progress(min(self.done / max(self.total, 1), 1.0), text)
        self.done += 1


def spread(values: list[float]) -> dict:
    """Median, min, max and every run (all in the values' own unit)."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": [round(v, 4) for v in values]}


def medians(**values: list[float]) -> dict:
    """{name: median, ..., "spread": {name: spread}}: medians up front, as engine.bench reports."""
    kept = {k: v for k, v in values.items() if v}
    out: dict = {k: (spread(v)["median"] if v else None) for k, v in values.items()}
    out["spread"] = {k: spread(v) for k, v in kept.items()}
    return out


def timed_ms(fn: Callable[[], object], device: torch.device | str) -> tuple[float, object]:
    """Wall milliseconds of one call, with the device synchronised before both clock reads."""
    start = now_ms(device)
    out = fn()
    return now_ms(device) - start, out


# Kernel switches for the lab's arms (outside the timed region, inside engine.exclusive()).
@contextmanager
def attention(model, name: str | None):
    """switched_kernel(model, name); a model that cannot run `name` at all (Gemma 2 takes eager only)
    keeps its own kernel, and `ran_kernel(model, name)` says which one ran instead."""
    switch = ExitStack()
    try:
        switch.enter_context(switched_kernel(model, name))
    except ValueError:
        object.__setattr__(model, "_tbt_kernel_instead", {**getattr(model, "_tbt_kernel_instead", {}),
                                                          name: model.config._attn_implementation})
    with switch:
        yield


def ran_kernel(model, name: str) -> str:
    """The kernel an arm asking for `name` ran on this model (its own where it cannot run `name`)."""
    return getattr(model, "_tbt_kernel_instead", {}).get(name, name)


def greedy_timing(model, ids: list[int], new_tokens: int, use_cache: bool = True,
                  cancel: threading.Event | None = None) -> dict:
    """Greedy decoding with one timed forward pass per token, and nothing else on the clock.

    With the cache, each step feeds the newest token and reuses the keys and values kept so far;
    without it, each step feeds the whole sequence again. Step 0 is the prefill pass (the prompt),
    so its time is the TTFT of the model work. Returns {"ttft_ms", "step_ms" (later steps),
    "tokens", "kv_tokens" (cached tokens after each step; 0 without a cache)}. A set `cancel` raises
    Stopped before the next pass: one run without the cache took over 20 s on a loaded 2-core box,
    and a Stop waited for its end.
    """
    device = model.device
    cache = DynamicCache(config=model.config) if use_cache else None
    sequence = torch.tensor([ids], device=device)                  # [1, T], built before any clock
    fed = sequence
    tokens, ms_all, kv = [], [], []
    with torch.inference_mode():
        for _ in range(new_tokens):
            if cancel is not None and cancel.is_set():
                raise Stopped
            ms, out = timed_ms(lambda: model(input_ids=fed, cache=cache, use_cache=use_cache,
                                             logits_to_keep=1).logits[0, -1].argmax(), device)
            token = int(out)                                        # off the clock: the next input
            tokens.append(token)
            ms_all.append(ms)
            kv.append(cache.get_seq_length() if cache is not None else 0)
            step = torch.tensor([[token]], device=device)
            sequence = torch.cat([sequence, step], dim=1)
            fed = step if cache is not None else sequence
    return {"ttft_ms": ms_all[0], "step_ms": ms_all[1:], "tokens": tokens, "kv_tokens": kv}


def is_cuda(device: torch.device | str) -> bool:
    return torch.device(device).type == "cuda"


def peak_bytes(fn: Callable[[], object], device: torch.device | str) -> tuple[int, str, object]:
    """Peak bytes of tensors allocated during one call, above what was live before it.

    CUDA: torch.cuda.max_memory_allocated after a reset of the peak counter.
    CPU: the torch profiler's allocation events (every tensor malloc and free, with sizes), summed
    in time order; the highest point of that running sum is the peak. This counts tensors only,
    like tracemalloc counts Python objects, so it is not disturbed by what the C allocator keeps.
    Returns (bytes, method, the call's result).
    """
    if is_cuda(device):
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        out = fn()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base), "torch.cuda.max_memory_allocated", out
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
    events = [(e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]"]
    live = peak = 0
    for _, nbytes in sorted(events):
        live += nbytes
        peak = max(peak, live)
    return int(peak), "torch.profiler memory events (tensor bytes)", out


def release(device: torch.device | str) -> None:
    """Give memory of dropped models back: collect, empty the CUDA cache, and on Linux ask the C
    allocator to return freed pages to the system, so the app's footprint does not grow."""
    gc.collect()
    if is_cuda(device):
        torch.cuda.empty_cache()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def matmul_flops(device: torch.device | str, dtype: torch.dtype, n: int = 2048, repeats: int = 5) -> float:
    """Measured matmul FLOP/s: the best of several n x n @ n x n products (2·n³ FLOPs each)."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    torch.matmul(a, b)                                   # warm-up: kernel selection, page faults
    best = float("inf")
    for _ in range(repeats):
        ms, _ = timed_ms(lambda: torch.matmul(a, b), device)
        best = min(best, ms)
    return 2 * n ** 3 / (best / 1000)


def read_bandwidth(device: torch.device | str, megabytes: int = 768, repeats: int = 5) -> float:
    """Memory read bandwidth in bytes/s of `device`: the best of several sums over a tensor far
    larger than the caches (CPU RAM, or GPU memory on CUDA). The bench uses it too."""
    x = torch.ones(megabytes * 2**20 // 4, dtype=torch.float32, device=device)
    x.sum()
    best = float("inf")
    for _ in range(repeats):
        ms, _ = timed_ms(lambda: x.sum(), device)
        best = min(best, ms)
    return x.numel() * 4 / (best / 1000)


def elapsed_s(start: float) -> float:
    """Seconds of work since `start` (a `clock.work_s()` read): a back-room job's pauses left out."""
    return work_s() - start
