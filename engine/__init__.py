"""Token by Token's inference engine: load a causal LM, run it phase by phase with hooks, and
record everything measured into a Trace. No UI code lives here (no gradio, no altair)."""

from .core import Engine
from .errors import EngineError, InvalidRequest, ModelLoadError, TraceFormatError
from .generate import Event, run_trace, stream_trace
from .loading import EMBEDDED, load
from .request import Limits
from .trace import SCHEMA, Settings, Trace

__all__ = ["Engine", "EngineError", "InvalidRequest", "ModelLoadError", "TraceFormatError", "Event",
           "run_trace", "stream_trace", "EMBEDDED", "load", "Limits", "SCHEMA", "Settings", "Trace"]
