"""Reading a visitor's trace file (the page's upload and /read_trace): data only, size-capped, and
checked field against field (Trace.validate) before anything draws it."""

from __future__ import annotations

from pathlib import Path

from engine import EngineError
from engine.environment import Limits
from engine.schema.validate import read_trace

from ui.host.errors import message, refuse


def read_upload(path: str | None, limits: Limits, lang: str = "en", reader=read_trace, unusable="trace_unusable",
                plain: bool = False):
    """The trace in the file at `path` (or what `reader` makes of it: a serving-floor file for
    engine.schema.floor_check.read_floor); every failure is a gr.Error that says, in `lang`, what is
    wrong with it. `plain` (the page's upload boxes): one plain sentence in English too, the part of
    the file in words; the API's English callers keep the field's path (`plain=False`)."""
    if not path or not isinstance(path, str):
        raise refuse("upload_none", lang)
    cap = limits.max_upload_bytes
    try:
        size = Path(path).stat().st_size
    except OSError:
        raise refuse("upload_unreadable", lang) from None
    if size > cap:
        raise refuse("upload_too_big", lang, mb=f"{size / 1e6:.0f}", cap=f"{cap / 1e6:.0f}")
    try:
        return reader(Path(path).read_bytes(), limits)
    except EngineError as exc:
        raise refuse(unusable, lang, reason=message(exc, lang, plain)) from None
