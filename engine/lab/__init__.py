"""Chapter 6, the acceleration lab: what makes inference fast, measured side by side on this machine.

    run_lab(engine, quick=False, only=None, progress=None, cancel=None, draft=None) -> dict (JSON-ready)

Seven experiments: `kv_cache` (cache on vs off), `attention` (eager vs SDPA vs FlashAttention-2, in
kernels.py), `weights` (fp32 / bf16 / int8 / nf4), `roofline` (lower bounds from bandwidth and
FLOP/s, next to what was measured), and what servers do (batching.py): `batching` (the batching
frontier) and `verify` (one pass over k new tokens, the price speculative decoding pays); and
`speculative` (speculative.py: prompt lookup, and a `draft` model if given, against plain greedy). Each
uses a warm-up run and repeats, reports medians with their spread, reports progress as (fraction,
text), and stops between runs when `cancel` is set (the KV cache, weights and roofline runs also
between their passes: measure.greedy_timing), returning what it measured marked "partial": true.

Fair timings: each experiment times inside `engine.exclusive(...)` ("exclusive": true in its
section), so a visitor's run waits at its next forward pass instead of sharing the CPU or GPU with
the clock, and only forward passes are timed (see measure.py). Every arm names its attention
implementation itself and puts the engine's own back afterwards.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Callable

import torch

from engine.model.clock import work_s
from engine.model.core import Engine
from engine.errors import InvalidRequest
from engine.lab import batching, host, kernels, kv_cache, roofline, speculative, weights
from engine.lab.measure import ran_kernel

from engine.schema.lab import EXPERIMENTS as NAMES, SCHEMA  # noqa: F401 (SCHEMA: re-exported)

EXPERIMENTS: dict[str, Callable[..., dict]] = {
    "kv_cache": kv_cache.run,
    "attention": kernels.run,
    "weights": weights.run,
    "roofline": roofline.run,
    "batching": batching.run,
    "verify": batching.verify,
    "speculative": speculative.run,
}
assert tuple(EXPERIMENTS) == NAMES, "engine/schema/lab.py lists the lab's experiments"


def run_lab(engine: Engine, quick: bool = False, only: list[str] | None = None,
            progress: Callable[[float, str], None] | None = None,
            cancel: threading.Event | None = None, draft: Engine | None = None,
            weight_formats: tuple[str, ...] | None = None, host_figures: dict | None = None) -> dict:
    """The experiments named in `only` (all by default). `host_figures`: this host's bandwidth and
    FLOP/s as another process measured them (the server's, for a back-room job), used instead of
    measuring again; the result's "host" gives back the figures used, if any experiment needed them."""
    names = [n.strip() for n in only if n.strip()] if only else list(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown or not names:
        raise InvalidRequest(f"unknown experiment(s) {', '.join(unknown) or '(none)'}; "
                             f"choose from {', '.join(EXPERIMENTS)}")
    host.adopt(host_figures)                # one measurement per host (engine/lab/host.py)
    ensure_device = getattr(engine, "ensure_device", None)
    if ensure_device is not None:          # ZeroGPU: the model moves to CUDA only inside a GPU call
        ensure_device()
    info = engine.info
    result: dict = {
        "schema": SCHEMA, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "quick": quick, "model": info.id, "device": str(engine.device), "dtype": info.dtype,
        "attn_implementation": info.attn_implementation, "threads": torch.get_num_threads(),
        "torch": torch.__version__, "experiments": names, "seconds": {},
    }
    for i, name in enumerate(names):
        if cancel is not None and cancel.is_set():
            break
        start = work_s()
        extra = {"draft": draft} if name == "speculative" else {}
        if name == "weights" and weight_formats:
            extra = {"formats": tuple(weight_formats)}
        with host.watching_load() as watch:      # the machine's other work meanwhile (viz says when it mattered)
            result[name] = EXPERIMENTS[name](engine, quick=quick, progress=_part(progress, i, len(names), name),
                                             cancel=cancel, **extra)
        result[name]["load"] = watch.result()
        section = result[name]
        if isinstance(section.get("attn_implementation"), str):     # the kernel that ran (measure.ran_kernel)
            section["attn_implementation"] = ran_kernel(engine.model, section["attn_implementation"])
        result["seconds"][name] = round(work_s() - start, 2)
    result["kv_cache_speedup"] = result.get("kv_cache", {}).get("speedup")
    result["host"] = host.known(engine.device, engine.model.dtype)
    result["partial"] = any(result.get(n, {"partial": True})["partial"] for n in names)
    return result


def _part(progress, index: int, count: int, name: str):
    """Progress of one experiment mapped onto its share of the whole lab run."""
    if progress is None:
        return None
    prefix = f"{name.replace('_', ' ')}: " if count > 1 else ""
    return lambda fraction, text: progress((index + fraction) / count, prefix + text)
