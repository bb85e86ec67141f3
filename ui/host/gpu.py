"""ZeroGPU support: on a Space with the `spaces` package, GPU work runs inside functions decorated
with `spaces.GPU`. Elsewhere the decorator does nothing.

On ZeroGPU (`SPACES_ZERO_GPU` set) such a function runs in a forked worker process:
- The model is put on "cuda" at start (a plain `.to`, no `device_map`); `spaces` moves it to the
  real GPU in the worker.
- A Stop flag or a lock set in the page's process never reaches the worker. What does reach it is
  the close of the generator: `spaces` tells the worker to close its copy. So on ZeroGPU every long
  function is a generator, and the page's process closes it itself when its visitor's Stop flag is
  set, looked at as each item goes by (ui/host/runs.closed_on_stop; the worker beats at least once a
  second: ui/host/runs.background). Stop does not cancel the event: Gradio's cancel sometimes left the
  generator running, never closed (a close that came while the generator was waiting for the worker's
  next item).
- A function gets 60 s unless told otherwise and is killed after that; the lab and the evaluation
  take minutes. `duration` says how long a call may need, from its own arguments."""

from __future__ import annotations

import os

try:
    import spaces
except ImportError:       # not on a Hugging Face Space
    spaces = None

ZERO_GPU = spaces is not None and os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")

SECONDS_PER_TOKEN = 0.25  # generous for a GPU: a slow step with capture, on a busy shared card
BASE_SECONDS = 30         # model move to the GPU, prefill, drawing


def for_tokens(position: int):
    """A duration callable: BASE_SECONDS plus SECONDS_PER_TOKEN per token asked for, the count
    being the positional argument `position` (or a sum of several)."""
    positions = (position,) if isinstance(position, int) else tuple(position)

    def duration(*args, **_kwargs) -> int:
        tokens = 0
        for p in positions:
            try:
                tokens += int(args[p])
            except (IndexError, TypeError, ValueError):
                tokens += 1024
        return int(BASE_SECONDS + SECONDS_PER_TOKEN * max(tokens, 1))
    return duration


def on_gpu(fn, duration=None):
    """`spaces.GPU(fn)` on ZeroGPU (with `duration`: seconds, or a callable of fn's arguments),
    `fn` itself everywhere else."""
    if spaces is None:
        return fn
    return spaces.GPU(duration=duration)(fn) if duration is not None else spaces.GPU(fn)
