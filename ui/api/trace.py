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
from engine.run.protocol import TraceArgs
from engine.schema.trace import Settings

from ui.api.args import D, ENGINE, arguments, as_file, engine_of, lang_of_caller
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
        a = arguments(TraceArgs, lang, self.models.limits, prompt=prompt, max_new_tokens=max_new_tokens,
                      temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, attention=attention,
                      logit_lens=logit_lens, chat_template=chat_template, model=model)
        settings = Settings(**a.model_dump(exclude={"prompt", "model"}))
        try:
            engine = engine_of(self.models, a.model, lang)
            with API_SLOTS.hold(request, BUSY):
                events = torch_side("engine.run.generate").stream_trace(engine, a.prompt, settings, keep_cache=True)
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
