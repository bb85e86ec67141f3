"""This host's memory bandwidth and matmul FLOP/s: measured once, then the same for every roofline.

    figures(device, dtype, hold=None) -> {"bandwidth_bytes_s", "peak_flops", "host", "device", "dtype",
                                          "measured_at", "method"}
    adopt(figures) -> bool        known(device, dtype) -> dict | None

Every lower bound on the page divides bytes by a bandwidth and FLOPs by a peak: the lab's roofline,
its batching frontier and the profile's per-op times. Measured apart, a busy shared machine gave
three different floors for the same decode step (29, 32 and 40 GB/s). So a process measures once
per device and dtype and keeps it; a figure measured by another process on the same host is adopted
instead of measuring again: the server hands its own to each back-room job and takes the job's when
the job measured first (ui/chapters/lab.py), and `python -m engine profile --machine LAB.json` takes
a recorded lab's, so the recordings the walkthrough shows share one. A figure names its host (the
CPU model and thread count, or the GPU) and is adopted only where it names this one.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime, timezone

import torch

from engine.lab.measure import is_cuda, matmul_flops, read_bandwidth

MEGABYTES, REPEATS, MATMUL_N = 768, 5, 2048
METHOD = f"bandwidth: best of {REPEATS} sums over {MEGABYTES} MiB; FLOP/s: best of {REPEATS} {MATMUL_N}² matmuls"
_KNOWN: dict[tuple[str, str, str], dict] = {}
_LOCK = threading.Lock()


def host_name(device: torch.device | str) -> str:
    """What names this host for these figures: the GPU, or the CPU's model and the threads torch uses."""
    if is_cuda(device):
        return torch.cuda.get_device_name(device)
    model = "CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {torch.get_num_threads()} threads"


def _key(device, dtype) -> tuple[str, str, str]:
    return host_name(device), torch.device(device).type, str(dtype).removeprefix("torch.")


def known(device: torch.device | str, dtype) -> dict | None:
    """The figures this process holds for this host, device and dtype (None before any was taken)."""
    return _KNOWN.get(_key(device, dtype))


def adopt(found: dict | None) -> bool:
    """Keep figures measured by another process on this host (the fields `figures` returns); a figure
    of another host, device or dtype, or one where this process already has its own, is left alone."""
    if not found or not found.get("bandwidth_bytes_s") or not found.get("peak_flops"):
        return False
    key = (found.get("host"), found.get("device"), found.get("dtype"))
    with _LOCK:
        if key[0] != host_name(key[1] or "cpu") or key in _KNOWN:
            return False
        _KNOWN[key] = {k: found[k] for k in ("bandwidth_bytes_s", "peak_flops", "host", "device", "dtype",
                                             "measured_at", "method") if k in found}
    return True


def figures(device: torch.device | str, dtype, hold=None) -> dict:
    """This host's read bandwidth and matmul FLOP/s in `dtype`, measured the first time (about 1.5 s
    on two CPU cores) while `hold` is held (the engine's lock: no pass beside the 768 MiB sums)."""
    key = _key(device, dtype)
    if key in _KNOWN:
        return _KNOWN[key]
    # `hold` before our own lock, always in that order: a lab experiment holding the engine that asks
    # for the figures meanwhile waits on our lock only, never the other way round
    with hold or contextlib.nullcontext(), _LOCK, torch.inference_mode():
        if key not in _KNOWN:
            _KNOWN[key] = {"bandwidth_bytes_s": read_bandwidth(device, MEGABYTES, REPEATS),
                           "peak_flops": matmul_flops(device, getattr(torch, key[2]), n=MATMUL_N, repeats=REPEATS),
                           "host": key[0], "device": key[1], "dtype": key[2],
                           "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "method": METHOD}
        return _KNOWN[key]
