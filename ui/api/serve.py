"""/serve: one serving-floor run through the API, within the host's caps.

    client.predict(requests=8, rate=4.0, api_name="/serve") -> [figures, the Floor file]

It runs like the page's (ui/chapters/floor.py): in the back room, standing still while any visitor's run
goes, one at a time with the lab (concurrency group "lab"). `rate` 0 sends every request at once.
The figures are `python -m engine floor`'s (engine/floor/figures.py).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator

import gradio as gr

from engine import EngineError
from engine.floor.figures import figures
from engine.floor.workload import check
from engine.run.protocol import ServeArgs
from engine.schema.floor import FloorSettings

from ui.api.args import arguments, as_file, lang_of_caller
from ui.host.errors import refused
from ui.chapters.floor import job
from ui.host.gpu import on_gpu
from ui.host.lab_mode import allow
from ui.host.models import Models
from ui.host.runs import KeptFiles, background

D = FloorSettings()


class ServeEndpoint:
    def __init__(self, models: Models):
        self.models = models
        self.files = KeptFiles("floor-api", keep=32)

    def serve(self, requests: int = D.requests, rate: float = D.rate, prompt_tokens: int = D.prompt_tokens,
              shared_prefix: int = D.shared_prefix, new_tokens: int = D.new_tokens, page_size: int = D.page_size,
              num_blocks: int = D.num_blocks, max_batch_tokens: int = D.max_batch_tokens,
              scheduler: str = D.scheduler, seed: int = D.seed, model: str = "",
              request: gr.Request = None) -> Iterator[list | None]:
        """Serve a workload of `requests` chat requests arriving at `rate` a second (0: all at once)
        through continuous batching, one at a time and one static batch; returns [figures, file]."""
        lang = lang_of_caller(request)
        a = arguments(ServeArgs, lang, self.models.limits, requests=requests, rate=rate, prompt_tokens=prompt_tokens,
                      shared_prefix=shared_prefix, new_tokens=new_tokens, page_size=page_size, num_blocks=num_blocks,
                      max_batch_tokens=max_batch_tokens, scheduler=scheduler, seed=seed, model=model)
        # the workload's ranges and choices are the floor's own (engine/floor/workload.py `check`, below)
        whole = a.model_dump(exclude={"rate", "scheduler", "model"})
        s = FloorSettings(arrival="poisson" if a.rate > 0 else "burst", rate=a.rate if a.rate > 0 else D.rate,
                          scheduler=a.scheduler, **whole)
        allow(self.models, a.model, lang)      # the host's TBT_LAB, as on the page
        try:
            engine = self.models.get(a.model or None, lang)
            check(s, engine.limits, engine.info.kv_bytes(1))
            cancel = threading.Event()   # set if the caller goes away (background closes)
            data = yield from background(job(self.models, engine, dataclasses.asdict(s), cancel,
                                             "serving floor (API)"), cancel, lambda fraction, text: None)
        except EngineError as exc:
            raise refused(exc, lang) from None
        data.pop("backroom", None)
        path = self.files.write_text(json.dumps(data, ensure_ascii=False))
        yield [figures(data), as_file(path)]

    def declare(self) -> None:
        gr.api(on_gpu(self.serve, duration=600), api_name="serve", concurrency_limit=1, concurrency_id="lab")
