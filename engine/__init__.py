"""Token by Token's inference engine: load a causal LM, run it phase by phase with hooks, and
record everything measured into a Trace. No UI code lives here (no gradio, no altair).

Names are imported lazily, so `import engine.trace` (what viz/ needs) does not pull in torch.
"""

import importlib
import os

# Inductor's on-disk cache (the compiled decode path's C++ kernel builds and autotuning results,
# engine/fast.py): torch fixes TORCHINDUCTOR_CACHE_DIR the first time it needs the folder, which can
# be before the path starts, so it is set here, before any engine module loads torch. Measured: the
# first graph compiled in 145 s on an empty cache, 111 s on the same cache warm.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.environ.get("TBT_COMPILE_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "token-by-token", "inductor"))

_EXPORTS = {
    "Engine": "core", "EngineError": "errors", "InvalidRequest": "errors", "ModelLoadError": "errors",
    "TraceFormatError": "errors", "Event": "generate", "run_trace": "generate",
    "stream_trace": "generate", "EMBEDDED": "specs", "load": "loading", "Limits": "request",
    "SCHEMA": "trace", "Settings": "trace", "Trace": "trace",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
