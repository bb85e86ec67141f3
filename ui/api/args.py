"""What every endpoint shares: its arguments checked as the caller sent them (gr.api does no
conversion) by the endpoint's request model (engine/run/protocol.py), the caller's language, files
in and out, and the engine group's limit.

A wrong argument is answered with a message that names it, in the caller's language: a caller that
sends `Accept-Language: zh` (gradio_client: `Client(url, headers={"Accept-Language": "zh"})`) is
answered in Chinese (assets/strings/errors.json, through ui/host/errors.py); English otherwise.
"""

from __future__ import annotations

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.environment import Limits
from engine.run.protocol import checked
from engine.schema.trace import Settings

from ui.host.errors import refused
from ui.host.runs import ENGINE_CONCURRENCY
from ui.page.i18n import lang_of

D = Settings()            # every run setting defaults to the engine's own default
ENGINE = {"concurrency_limit": ENGINE_CONCURRENCY, "concurrency_id": "engine"}


def arguments(kind, said: str, limits: Limits, /, **values):
    """The caller's arguments as the endpoint's request model `kind` (engine/run/protocol.py), checked
    against the host's `limits`, or the refusal of the first wrong one, in the caller's language `said`
    (positional only: an endpoint's own `lang` argument, the export's, is one of `values`)."""
    try:
        return checked(kind, values, limits)
    except EngineError as exc:
        raise refused(exc, said) from None


def lang_of_caller(request: gr.Request | None) -> str:
    """The language a caller asked for in its Accept-Language header ("en" without one)."""
    return lang_of((request.headers or {}).get("accept-language") if request is not None else None)


def file_path(file) -> str | None:
    """The server path of an uploaded file, sent as a FileData or its dict form."""
    return file.get("path") if isinstance(file, dict) else getattr(file, "path", None)


def as_file(path: str) -> dict:
    """A FileData as a dict: Gradio finds files to serve inside lists only in this form."""
    return FileData(path=path, orig_name=path.rsplit("/", 1)[-1], mime_type="application/json").model_dump()


def engine_of(models, model: str, lang: str):
    """The engine of the allowed model a caller named ("" is the host's default)."""
    return models.get(model or None, lang)
