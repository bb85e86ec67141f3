"""ZeroGPU support: on a Space with the `spaces` package, GPU work runs inside functions decorated
with `spaces.GPU`, and the model moves to CUDA only there. Elsewhere the decorator does nothing."""

from __future__ import annotations

try:
    import spaces
except ImportError:       # not on a Hugging Face Space
    spaces = None


def on_gpu(fn):
    """`spaces.GPU(fn)` on ZeroGPU, `fn` itself everywhere else."""
    return spaces.GPU(fn) if spaces is not None else fn
