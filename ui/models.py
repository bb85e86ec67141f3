"""The models a host allows, loaded once each; visitors pick only among them.

`TBT_MODELS` (comma-separated hub ids or folders, "embedded" for the built-in SmolLM2) sets the
allow-list; the first is the default. If the default cannot be loaded (no network, no such model,
needs remote code), the app starts on the embedded model and says so on the page.
"""

from __future__ import annotations

import os
import threading

import gradio as gr
import torch

from engine import EMBEDDED, Engine, EngineError

from .errors import internal, reference



def allowed_from_env(cli_model: str | None = None) -> list[str]:
    raw = os.environ.get("TBT_MODELS", "")
    ids = [m.strip() for m in raw.split(",") if m.strip()]
    ids = [EMBEDDED if m == "embedded" else m for m in ids]
    return ids or [cli_model or EMBEDDED]


def load_engine(model_id: str) -> Engine:
    """Hub and local models spread over the GPUs with accelerate when CUDA is there at start."""
    device_map = "auto" if model_id != EMBEDDED and torch.cuda.is_available() else None
    return Engine.load(None if model_id == EMBEDDED else model_id, device_map=device_map)


class Models:
    def __init__(self, allowed: list[str]):
        self.allowed = list(dict.fromkeys(allowed))
        self.engines: dict[str, Engine] = {}
        self.notice = ""
        self._lock = threading.Lock()
        first = self.allowed[0]
        try:
            self.engines[first] = load_engine(first)
        except EngineError as exc:           # the reason (paths, URLs) goes to the log, not the page
            ref = reference(f"loading {first}", exc)
            self.notice = (f"⚠️ The model `{first}` could not be loaded (reference {ref} in the server log). "
                           f"This page falls back to the embedded {EMBEDDED.split(':')[-1]}.")
            self.engines[EMBEDDED] = load_engine(EMBEDDED)
            self.allowed = [EMBEDDED] + [m for m in self.allowed if m not in (first, EMBEDDED)]
        self.default = self.allowed[0]

    def get(self, model_id: str | None) -> Engine:
        """The engine for an allowed model, loading it on first use."""
        model_id = model_id or self.default
        if model_id not in self.allowed:
            raise gr.Error(f"{model_id!r} is not one of the models this page offers")
        with self._lock:
            if model_id not in self.engines:
                try:
                    self.engines[model_id] = load_engine(model_id)
                except EngineError as exc:
                    raise gr.Error(f"cannot load {model_id}: {internal(f'loading {model_id}', exc)}") from None
            return self.engines[model_id]

    @property
    def engine(self) -> Engine:
        return self.engines[self.default]
