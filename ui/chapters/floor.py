"""The serving floor chapter: a workload of many requests on the visitor's model, served through
transformers' continuous batching over a paged KV cache, beside one-at-a-time and one static batch.

It opens on a recorded workload (assets/floor/recorded.json, `make traces`); a visitor's own runs
in the back room like a lab experiment (engine/host/backroom.py: a child process that stands still
while any visitor's run goes, its clocks leaving the pauses out), one at a time for the whole host
(concurrency group "lab": the floor and the lab take the same machine).
"""

from __future__ import annotations

import dataclasses

import gradio as gr

from engine.errors import EngineError
from engine.floor.workload import branch_prompts, check
from engine.host import backroom
from engine.schema.floor import ARRIVALS, SCHEDULERS, Floor, FloorSettings
from engine.schema.floor_check import check_floor, read_floor
from engine.schema.serial import from_plain
from viz.charts import floor as fv
from viz.fmt import device_name
from viz.text.labels import LABELS, label, progress
from viz.text.load_note import floor_load_note, recorded_floor_note

from ui.host.errors import internal, message, say
from ui.host.gpu import ZERO_GPU, on_gpu
from ui.host.lab_mode import lab_mode
from ui.host.models import torch_side
from ui.host.runs import KeptFiles, StopFlags, background, closed_on_stop
from ui.host import recordings
from ui.chapters.common import PRIVATE, stop_button, stop_wiring, while_running
from ui.host.uploads import read_upload
from ui.page.plot import Plot

D = FloorSettings()
PAGE_SIZES = [4, 8, 16, 32, 64, 128, 256]


def views(floor: Floor | None, lang: str, is_recording: bool) -> list:
    """verdict, lanes, blocks, step cost, ways chart, ways table, requests table, ties (8 updates)."""
    if floor is None:
        return [label("floor_none", lang)] + [None] * 6 + [""]
    badge = label("floor_recorded", lang, date=floor.created[:10], device=device_name(floor.model.device))
    busy = floor_load_note(floor, lang)          # each way's share of a busy machine, when it was busy
    if is_recording:                             # a recording: its load (quiet), or that it kept none
        busy = " ".join(filter(None, (busy, recorded_floor_note(floor, lang))))
    verdict = (f"*{badge}*\n\n" if is_recording else "") + fv.verdict_md(floor, lang) + (f"\n\n{busy}" if busy else "")
    return [verdict, fv.lanes_chart(floor, lang), fv.blocks_chart(floor, lang), fv.step_cost_chart(floor, lang),
            fv.modes_chart(floor, lang), fv.modes_frame(floor, lang), fv.requests_frame(floor, lang),
            fv.ties_md(floor, lang)]


def job(models, engine, kwargs: dict, cancel, what: str):
    """The work of one serving-floor run, for ui/runs.background: in the back room (a child process that
    stands still while visitors run), or on ZeroGPU in its GPU process holding every engine."""
    def work(progress):
        if not ZERO_GPU:
            return backroom.call("floor", what, "engine.floor.serve:run_floor", kwargs, model=engine.info.id,
                                 progress=progress, cancel=cancel)
        with models.exclusive("floor"):
            return torch_side("engine.floor.serve").run_floor(engine, progress=progress, cancel=cancel, **kwargs)
    return work


class FloorActions:
    def __init__(self, models):
        self.models = models
        self.flags = StopFlags()
        self.files = KeptFiles("floor", keep=32)

    def settings(self, requests, arrival, rate, prompt_tokens, shared, new_tokens, page_size, blocks, batch_tokens,
                 scheduler) -> FloorSettings:
        whole = lambda v: int(v) if isinstance(v, (int, float)) and float(v).is_integer() else v   # noqa: E731
        return FloorSettings(requests=whole(requests), arrival=arrival, rate=rate, prompt_tokens=whole(prompt_tokens),
                             shared_prefix=whole(shared), new_tokens=whole(new_tokens), page_size=whole(page_size),
                             num_blocks=whole(blocks), max_batch_tokens=whole(batch_tokens), scheduler=scheduler)

    def run(self, requests, arrival, rate, prompt_tokens, shared, new_tokens, page_size, blocks, batch_tokens,
            scheduler, lang, model_id, tree, request: gr.Request):
        """A generator: progress in the note, then every view of the visitor's own run. With `tree` (the
        Explore run with its forks), the requests are that run's lineages instead of the workload."""
        values = (requests, arrival, rate, prompt_tokens, shared, new_tokens, page_size, blocks, batch_tokens, scheduler)
        engine = self.models.get(model_id, lang)
        if lab_mode(engine.info.id) != "on":
            raise gr.Error(label(f"lab_mode_{lab_mode(engine.info.id)}", lang), title=say("error_title", lang))
        try:
            s, given = self.settings(*values), {}
            if tree is not None:           # all at once; the workload's own sizes do not apply
                if tree.model.id != engine.info.id:
                    raise EngineError("the run on show is another model's", "floor_other_model", model=tree.model.id)
                names, ids = branch_prompts(tree)
                given = {"inputs": ids, "names": names}
                s = dataclasses.replace(s, requests=len(ids), arrival="burst", shared_prefix=0)
            check(s, engine.limits, engine.info.kv_bytes(1), longest=max(map(len, given["inputs"])) if given else None)
        except EngineError as exc:
            raise gr.Error(message(exc, lang), title=say("error_title", lang)) from None

        def shown(fraction: float, text: str) -> tuple:
            what = label(f"floor_progress_{text}", lang) if f"floor_progress_{text}" in LABELS else text
            return (progress(fraction, what, lang),) + (gr.skip(),) * 9
        yield shown(0.0, "continuous")
        try:
            with self.flags.running(request) as flag:
                data = yield from background(job(self.models, engine, dataclasses.asdict(s) | given, flag,
                                                 "serving floor"), flag, shown)
        except EngineError as exc:
            raise gr.Error(message(exc, lang), title=say("error_title", lang)) from None
        except Exception as exc:           # a library failed: a reference, details in the log
            raise gr.Error(internal("serving floor", exc, lang), title=say("error_title", lang)) from None
        data.pop("backroom", None)
        floor = check_floor(from_plain(Floor, data, "floor"))
        drawn = views(floor, lang, False)
        yield (drawn[0], floor, *drawn[1:], gr.update(value=self.files.write_text(floor.to_json()), visible=True))

    def stop(self, request: gr.Request):
        self.flags.stop_tab(request)


class FloorChapter:
    """The chapter's components and events, inside the caller's `with gr.Tab(...)`; English first,
    then the page's language when it is known or changes. `tree`: Explore's run with its forks."""

    def __init__(self, models, model_id, lang: gr.State, tree: gr.State):
        self.actions, self.lang, self.limits = FloorActions(models), lang, models.limits
        self.live = lab_mode(models.default) == "on"     # the page is built before the model loads (app.py)
        self.floor = gr.State(None)                      # the visitor's own run, once there is one
        self.named: dict = {}                            # component -> label key, for the relabel
        with gr.Row():
            with gr.Column(scale=2):
                self.workload()
            with gr.Column(scale=2):
                self.cache_and_buttons()
        self.results()
        self.wire(model_id, tree)

    def name(self, component, key: str):
        self.named[component] = key
        return component

    def workload(self) -> None:
        """How many requests, how they arrive, how long they are."""
        n = self.name
        self.requests = n(gr.Slider(1, self.limits.floor_max_requests, value=D.requests, step=1,
                                    label=label("floor_ui_requests", "en"), elem_id="floor-requests"), "floor_ui_requests")
        self.arrival = n(gr.Radio([(label(f"floor_ui_{a}", "en"), a) for a in ARRIVALS], value=D.arrival,
                                  label=label("floor_ui_arrival", "en"), elem_id="floor-arrival"), "floor_ui_arrival")
        self.rate = n(gr.Slider(0.5, 20, value=D.rate, step=0.5, label=label("floor_ui_rate", "en"),
                                elem_id="floor-rate"), "floor_ui_rate")
        self.prompt_tokens = n(gr.Slider(32, 512, value=D.prompt_tokens, step=8, label=label("floor_ui_prompt", "en"),
                                         elem_id="floor-prompt"), "floor_ui_prompt")
        self.shared = n(gr.Slider(0, 256, value=D.shared_prefix, step=8, label=label("floor_ui_shared", "en"),
                                  elem_id="floor-shared"), "floor_ui_shared")
        self.new_tokens = n(gr.Slider(1, 128, value=D.new_tokens, step=1, label=label("floor_ui_new", "en"),
                                      elem_id="floor-new"), "floor_ui_new")

    def cache_and_buttons(self) -> None:
        """The paged cache's sizes, the scheduler, Run / Stop / the fork's branches, the files."""
        n, live = self.name, self.live
        self.page_size = n(gr.Dropdown(PAGE_SIZES, value=D.page_size, label=label("floor_ui_page", "en"),
                                       elem_id="floor-page"), "floor_ui_page")
        self.blocks = n(gr.Number(value=D.num_blocks, precision=0, label=label("floor_ui_blocks", "en"),
                                  elem_id="floor-blocks"), "floor_ui_blocks")
        self.batch_tokens = n(gr.Slider(16, 1024, value=D.max_batch_tokens, step=16, label=label("floor_ui_batch", "en"),
                                        elem_id="floor-batch"), "floor_ui_batch")
        self.scheduler = n(gr.Radio([(label(f"floor_ui_{k}", "en"), k) for k in SCHEDULERS], value=D.scheduler,
                                    label=label("floor_ui_scheduler", "en"), elem_id="floor-scheduler"),
                           "floor_ui_scheduler")
        with gr.Row():
            self.run = gr.Button(label("floor_ui_run", "en"), variant="primary", elem_id="floor-run", visible=live)
            self.stop = stop_button(label("lab_stop", "en"), "floor-stop", visible=live)
        self.branches = gr.Button(label("floor_ui_branches", "en"), elem_id="floor-branches", visible=live, size="sm")
        self.download = n(gr.File(label=label("floor_ui_download", "en"), interactive=False, elem_id="floor-download",
                                  visible=False), "floor_ui_download")
        # no file_types (the browser's type check says an English "Error"; the validator says why,
        # plainly) and no fixed height (90 px cut its "Click to Upload")
        self.upload = n(gr.File(label=label("floor_ui_upload", "en"), type="filepath", elem_id="floor-upload"),
                        "floor_ui_upload")

    def results(self) -> None:
        """The verdict, the lanes, the blocks beside what a step costs (why sharing and batching pay),
        the three ways, the tables and the ties; the recording until this visitor runs one."""
        first = views(recordings.floor(), "en", True)
        self.verdict = gr.Markdown(first[0], elem_id="floor-verdict")
        lanes = Plot(first[1], show_label=False, elem_id="floor-lanes")
        with gr.Row():
            blocks = Plot(first[2], show_label=False, elem_id="floor-blocks-plot", scale=3, min_width=320)
            step = Plot(first[3], show_label=False, elem_id="floor-step", scale=2, min_width=300)
        modes = Plot(first[4], show_label=False, elem_id="floor-modes")
        self.drawn = [lanes, blocks, step, modes,
                      gr.Dataframe(first[5], interactive=False, elem_id="floor-modes-table", wrap=True),
                      gr.Dataframe(first[6], interactive=False, elem_id="floor-requests-table", wrap=True),
                      gr.Markdown(first[7], elem_id="floor-ties")]

    @property
    def inputs(self) -> list:
        return [self.requests, self.arrival, self.rate, self.prompt_tokens, self.shared, self.new_tokens,
                self.page_size, self.blocks, self.batch_tokens, self.scheduler]

    def read(self, path, lang: str):
        """A serving-floor file from disk (`python -m engine floor --out`, or a run's download), read
        like a trace upload: size-capped, checked field against field, refused in the page's language."""
        return read_upload(path, self.limits, lang, reader=read_floor, unusable="floor_unusable", plain=True)

    def show_file(self, path, lang):
        shown = self.read(path, lang)
        drawn = views(shown, lang, False)
        return (drawn[0], shown, *drawn[1:])

    def check_file(self, path, lang) -> dict:
        """A file that is not a usable serving-floor file is refused on the upload box, before anything changes."""
        try:
            self.read(path, lang)
        except gr.Error as exc:
            return {self.upload: gr.validate(False, exc.message)}
        return {self.upload: gr.validate(True, "")}

    def relabel(self, own, lang) -> dict:
        updates = {c: gr.update(label=label(k, lang)) for c, k in self.named.items()}
        updates.update({self.run: gr.update(value=label("floor_ui_run", lang)),
                        self.branches: gr.update(value=label("floor_ui_branches", lang)),
                        self.stop: gr.update(value=label("lab_stop", lang)),
                        self.arrival: gr.update(label=label("floor_ui_arrival", lang),
                                                choices=[(label(f"floor_ui_{a}", lang), a) for a in ARRIVALS]),
                        self.scheduler: gr.update(label=label("floor_ui_scheduler", lang),
                                                  choices=[(label(f"floor_ui_{k}", lang), k) for k in SCHEDULERS])})
        updates.update(dict(zip([self.verdict, *self.drawn], views(own or recordings.floor(), lang, own is None))))
        return updates

    def wire(self, model_id, tree) -> None:
        outputs = [self.verdict, self.floor, *self.drawn, self.download, self.stop]
        run = while_running(closed_on_stop(on_gpu(self.actions.run, duration=600), self.actions.flags))
        lab = {"concurrency_limit": 1, "concurrency_id": "lab", **PRIVATE}
        go = self.run.click(run, [*self.inputs, self.lang, model_id, gr.State(None)], outputs, **lab)
        forks = self.branches.click(run, [*self.inputs, self.lang, model_id, tree], outputs, **lab)
        stop_wiring(self.stop, self.actions.stop, [go, forks])
        self.upload.upload(self.show_file, [self.upload, self.lang], [self.verdict, self.floor, *self.drawn],
                           validator=self.check_file, **PRIVATE)
        relabelled = [*self.named, self.run, self.branches, self.stop, self.verdict, *self.drawn]
        self.lang.change(self.relabel, [self.floor, self.lang], list(dict.fromkeys(relabelled)), queue=False,
                         **PRIVATE)


def build(models, model_id, lang: gr.State, tree: gr.State) -> FloorChapter:
    return FloorChapter(models, model_id, lang, tree)
