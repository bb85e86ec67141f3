"""/fork: a trace file, a step and a token in; the trace with a new branch out, continued from that
step with that token on the run's cached prefix."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.run.protocol import ForkArgs

from ui.api.args import D, ENGINE, arguments, as_file, engine_of, file_path, lang_of_caller
from ui.host.errors import refused
from ui.host.gpu import for_tokens, on_gpu
from ui.host.models import torch_side
from ui.host.runs import API_SLOTS, BUSY, RunRefused
from ui.host.uploads import read_upload


class ForkEndpoint:
    def __init__(self, models, files):
        self.models, self.files = models, files

    def fork(self, trace: FileData, step: int, token: int, parent: str = "",
             max_new_tokens: int = D.max_new_tokens, recompute: bool = False, model: str = "",
             request: gr.Request = None) -> Iterator[FileData | None]:
        """Continue a trace (a /trace result, or a file) from `step` with `token`, one of that
        step's stored candidates, reusing the run's KV cache for the prefix (kept on the server
        for runs it made; otherwise built once). `parent` forks a branch instead of the run.
        Returns the trace with the new branch last in `branches`; `recompute` also times the
        same first token with the prefix recomputed from scratch (branch.recompute_ms)."""
        path, lang = file_path(trace), lang_of_caller(request)
        a = arguments(ForkArgs, lang, self.models.limits, step=step, token=token, parent=parent,
                      max_new_tokens=max_new_tokens, recompute=recompute, model=model)
        try:
            engine = engine_of(self.models, a.model, lang)
            source = read_upload(path, engine.limits, lang)
            with API_SLOTS.hold(request, BUSY):
                fork = torch_side("engine.run.fork")
                events = fork.stream_fork(engine, source, a.step, a.token, parent=a.parent,
                                          max_new_tokens=a.max_new_tokens)
                try:
                    while True:
                        next(events)
                        yield None
                except StopIteration as done:
                    forked = done.value
                finally:
                    events.close()
                if a.recompute:
                    forked = fork.measure_recompute(engine, forked, forked.branches[-1].id)
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        yield as_file(self.files.write(forked))

    def declare(self) -> None:
        gr.api(on_gpu(self.fork, for_tokens(4)), api_name="fork", **ENGINE)
