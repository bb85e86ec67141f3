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
import os
import threading
import time
from datetime import datetime, timezone

import torch

from engine.lab.measure import is_cuda, matmul_flops, read_bandwidth
from engine.model.clock import paused_s

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
                                             "measured_at", "method", "load") if k in found}
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
            # watched: a bandwidth measured while other work shares the cores is low, and every
            # bound divided by it too high (viz/text/load_note.py says so where it is busy)
            with watching_load() as watch:
                bandwidth = read_bandwidth(device, MEGABYTES, REPEATS)
                flops = matmul_flops(device, getattr(torch, key[2]), n=MATMUL_N, repeats=REPEATS)
            _KNOWN[key] = {"bandwidth_bytes_s": bandwidth, "peak_flops": flops,
                           "host": key[0], "device": key[1], "dtype": key[2],
                           "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "method": METHOD,
                           "load": watch.result()}
        return _KNOWN[key]


# --- how busy the machine is while something is measured ----------------------------------------
TICK_S = 1.0
WATCH_WAIT_S = 10.0


def _cpu_jiffies() -> tuple[int, int, int, int] | None:
    """(total, busy, steal, cpus) from /proc/stat in clock ticks, or None where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    fields = [int(v) for v in lines[0].split()[1:9]]      # user nice system idle iowait irq softirq steal
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    idle = fields[3] + fields[4]
    return sum(fields), sum(fields) - idle, fields[7], cpus


def _own_ticks() -> float:
    """CPU time this process used so far (all its threads), in clock ticks."""
    t = os.times()
    return (t.user + t.system) * os.sysconf("SC_CLK_TCK")


class LoadWatch:
    """Samples the machine once a TICK_S in a thread; an interval in which the job stood still for a
    visitor (the back room's pause ledger moved) is left out, as its clocks leave it out."""

    def __init__(self):
        self.total = self.busy = self.steal = self.own = self.seconds = 0.0
        self.cpus, self.stop = 0, threading.Event()
        self.thread = threading.Thread(target=self._watch, name="load-watch", daemon=True)

    def _sample(self):
        return _cpu_jiffies(), _own_ticks(), paused_s(), time.monotonic()

    def _add(self, before, after) -> None:
        (j0, own0, p0, t0), (j1, own1, p1, t1) = before, after
        if j0 is None or j1 is None or p1 != p0:
            return
        self.total += j1[0] - j0[0]
        self.busy += j1[1] - j0[1]
        self.steal += j1[2] - j0[2]
        self.own += own1 - own0
        self.seconds += t1 - t0
        self.cpus = j1[3]

    def _watch(self) -> None:
        last = self._sample()
        while not self.stop.wait(TICK_S):
            now = self._sample()
            self._add(last, now)
            last = now
        self._add(last, self._sample())

    def result(self) -> dict | None:
        """The HostLoad fields (engine/schema/load.py), or None where /proc/stat says nothing."""
        if self.total <= 0:
            return None
        others = max(0.0, self.busy - self.steal - self.own) / self.total
        return {"seconds": round(self.seconds, 1), "cpus": self.cpus, "others": round(min(others, 1.0), 3),
                "steal": round(self.steal / self.total, 3), "load_1m": round(os.getloadavg()[0], 2)}


@contextlib.contextmanager
def watching_load():
    """`with watching_load() as watch: …` then `watch.result()`: how busy the machine was meanwhile."""
    watch = LoadWatch()
    watch.thread.start()
    try:
        yield watch
    finally:
        watch.stop.set()
        watch.thread.join(WATCH_WAIT_S)      # it wakes on `stop` at once; a read of /proc/stat cannot hold it long
