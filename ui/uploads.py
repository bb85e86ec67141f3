"""Reading a visitor's trace file (the page's upload and /read_trace): data only, size-capped, and
checked field against field (Trace.validate) before anything draws it."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from engine import EngineError
from engine.environment import Limits
from engine.schema.trace import Trace
from engine.schema.validate import read_trace


def read_upload(path: str | None, limits: Limits) -> Trace:
    """The trace in the file at `path`; every failure is a gr.Error that says what is wrong with it."""
    if not path or not isinstance(path, str):
        raise gr.Error("choose a trace JSON file to load")
    cap = limits.max_upload_bytes
    try:
        size = Path(path).stat().st_size
    except OSError:
        raise gr.Error("the uploaded file could not be read; upload it again") from None
    if size > cap:
        raise gr.Error(f"that file is {size / 1e6:.0f} MB; traces up to {cap / 1e6:.0f} MB can be loaded")
    try:
        return read_trace(Path(path).read_bytes(), limits)
    except EngineError as exc:
        raise gr.Error(f"this file is not a usable trace: {exc}") from None
