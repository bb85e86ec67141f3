"""/compare: one question in normal and reasoning mode, both Trace files out."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.run.request import SIDE_BY_SIDE as S
from engine.run.side_by_side import interleave

from ui.api.args import ENGINE, as_file, engine_of, lang_of_caller, number_arg, text_arg
from ui.host.errors import refuse, refused
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
        prompt = text_arg("prompt", prompt, lang)
        budget = number_arg("thinking_budget", thinking_budget, lang, whole=True)
        answer = number_arg("answer_tokens", answer_tokens, lang, whole=True)
        for name, value, least in (("thinking_budget", budget, 0), ("answer_tokens", answer, 1)):
            if value < least:
                raise refuse("at_least", lang, name=name, lo=least, got=repr(value))
        try:
            engine = engine_of(self.models, model, lang)
            with API_SLOTS.hold(request, BUSY):
                for normal, reasoning, finished in interleave(engine, prompt, budget, answer):
                    if not finished:
                        yield None
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        yield [as_file(self.files.write(normal)), as_file(self.files.write(reasoning))]

    def declare(self) -> None:
        gr.api(on_gpu(self.compare, for_tokens((1, 2))), api_name="compare", **ENGINE)
