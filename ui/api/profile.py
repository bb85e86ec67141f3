"""/profile: where a run's time went, op by op, beside the roofline (ui/chapters/profile.py)."""

from __future__ import annotations

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.run.protocol import ProfileArgs

from ui.api.args import ENGINE, arguments, engine_of, file_path, lang_of_caller
from ui.chapters.profile import measure_profile
from ui.host.errors import refused
from ui.host.gpu import on_gpu
from ui.host.runs import API_SLOTS, BUSY, RunRefused
from ui.host.uploads import read_upload


class ProfileEndpoint:
    def __init__(self, models):
        self.models = models

    def profile(self, trace: FileData, step: int = 0, model: str = "", request: gr.Request = None) -> dict:
        """Where a run's time went (a /trace result, or a file of this model): its prefill and decode
        step `step` (0: the run's middle) replayed with timers on each op, beside the roofline's time
        for each op on this machine, and projected onto larger GPUs and models."""
        lang = lang_of_caller(request)
        a = arguments(ProfileArgs, lang, self.models.limits, step=step, model=model)
        try:
            engine = engine_of(self.models, a.model, lang)
            source = read_upload(file_path(trace), engine.limits, lang)
            with API_SLOTS.hold(request, BUSY):
                return measure_profile(engine, source, a.step or None)
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None

    def declare(self) -> None:
        gr.api(on_gpu(self.profile, 60), api_name="profile", **ENGINE)
