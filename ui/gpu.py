"""ZeroGPU support: on a Space with the `spaces` package, GPU work runs inside functions decorated
with `spaces.GPU`, and the model moves to CUDA only there. Elsewhere the decorator does nothing.

ZeroGPU grants a function 60 s unless told otherwise, and kills it after that; the lab and the
evaluation take minutes. `duration` says how long a call may need, from its own arguments."""

from __future__ import annotations

try:
    import spaces
except ImportError:       # not on a Hugging Face Space
    spaces = None

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
