"""Wall-clock reads that measure work, not kernel launches."""

import time

import torch


def now_ms(device: torch.device | str | None = None) -> float:
    """Milliseconds on a monotonic clock, after the device has finished queued work."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() * 1000.0
