"""Token by Token's inference engine: load a causal LM, run it phase by phase with hooks, and
record everything measured into a Trace. No UI code lives here (no gradio, no altair).

Names are imported lazily, so `import engine.schema.trace` (what viz/ needs) does not pull in torch.
"""

import importlib

_EXPORTS = {
    "Engine": "model.core", "EngineError": "errors", "InvalidRequest": "errors", "ModelLoadError": "errors",
    "TraceFormatError": "errors", "Event": "run.record", "run_trace": "run.generate",
    "stream_trace": "run.generate", "EMBEDDED": "schema.specs", "load": "model.loading",
    "Limits": "environment", "SCHEMA": "schema.trace", "Settings": "schema.trace", "Trace": "schema.trace",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
