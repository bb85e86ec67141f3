"""/trace: a prompt (and settings) in, the Trace JSON file out.

A generator that yields after every step: when the caller disconnects or cancels, Gradio closes it
at its next yield and the run stops there. The run's cache stays on the server (bounded), so a
/fork of the returned trace reuses it.
"""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.schema.trace import Settings

from ui.api.args import D, ENGINE, as_file, engine_of, flag_arg, lang_of_caller, number_arg, text_arg
from ui.host.errors import refused
from ui.host.gpu import for_tokens, on_gpu
from ui.host.models import torch_side
from ui.host.runs import API_SLOTS, BUSY, RunRefused


class TraceEndpoint:
    def __init__(self, models, files):
        self.models, self.files = models, files

    def trace(self, prompt: str, max_new_tokens: int = D.max_new_tokens, temperature: float = D.temperature,
              top_k: int = D.top_k, top_p: float = D.top_p, seed: int = D.seed, attention: bool = D.attention,
              logit_lens: bool = D.logit_lens, chat_template: bool = D.chat_template, model: str = "",
              request: gr.Request = None) -> Iterator[FileData | None]:
        """Run one prompt to the end and return its Trace as a JSON file (read it with
        engine.Trace.from_json). Yields nothing (None) after each step until the last."""
        lang = lang_of_caller(request)
        settings = Settings(
            max_new_tokens=number_arg("max_new_tokens", max_new_tokens, lang, whole=True),
            temperature=number_arg("temperature", temperature, lang),
            top_k=number_arg("top_k", top_k, lang, whole=True), top_p=number_arg("top_p", top_p, lang),
            seed=number_arg("seed", seed, lang, whole=True), attention=flag_arg("attention", attention, lang),
            logit_lens=flag_arg("logit_lens", logit_lens, lang),
            chat_template=flag_arg("chat_template", chat_template, lang))
        prompt = text_arg("prompt", prompt, lang)
        try:
            engine = engine_of(self.models, model, lang)
            with API_SLOTS.hold(request, BUSY):
                events = torch_side("engine.run.generate").stream_trace(engine, prompt, settings, keep_cache=True)
                try:
                    for event in events:
                        trace = event.trace
                        if event.kind != "done":
                            yield None
                finally:
                    events.close()
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        # the file carries the logit lens, computed now from the states the run kept (engine/model/lens.py)
        yield as_file(self.files.write(torch_side("engine.model.lens").exported(engine, trace)))

    def declare(self) -> None:
        gr.api(on_gpu(self.trace, for_tokens(1)), api_name="trace", **ENGINE)
