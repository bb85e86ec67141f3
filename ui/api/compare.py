"""/compare: one question in normal and reasoning mode, both Trace files out."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.run.protocol import CompareArgs
from engine.run.request import SIDE_BY_SIDE as S
from engine.run.side_by_side import interleave

from ui.api.args import ENGINE, arguments, as_file, engine_of, lang_of_caller
from ui.host.errors import refused
from ui.host.gpu import for_tokens, on_gpu
from ui.host.runs import API_SLOTS, BUSY, RunRefused


class CompareEndpoint:
    def __init__(self, models, files):
        self.models, self.files = models, files

    def compare(self, prompt: str, thinking_budget: int = S.thinking_budget, answer_tokens: int = S.answer_tokens,
                model: str = "", request: gr.Request = None) -> Iterator[list[FileData] | None]:
        """One question in normal and reasoning mode, the two runs taking turns; returns
        [normal, reasoning] Trace JSON files. Each trace's times are its own mode's."""
        lang = lang_of_caller(request)
        a = arguments(CompareArgs, lang, self.models.limits, prompt=prompt, thinking_budget=thinking_budget,
                      answer_tokens=answer_tokens, model=model)
        try:
            engine = engine_of(self.models, a.model, lang)
            with API_SLOTS.hold(request, BUSY):
                for normal, reasoning, finished in interleave(engine, a.prompt, a.thinking_budget, a.answer_tokens):
                    if not finished:
                        yield None
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        yield [as_file(self.files.write(normal)), as_file(self.files.write(reasoning))]

    def declare(self) -> None:
        gr.api(on_gpu(self.compare, for_tokens((1, 2))), api_name="compare", **ENGINE)
