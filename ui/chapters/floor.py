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
from viz.text.labels import LABELS, label

from ui.host.errors import internal, message, say
from ui.host.gpu import ZERO_GPU, on_gpu, stop_cancels
from ui.chapters.lab import lab_mode
from ui.host.models import torch_side
from ui.host.runs import KeptFiles, StopFlags, background
from ui.host import recordings
from ui.host.uploads import read_upload

D = FloorSettings()
PAGE_SIZES = [4, 8, 16, 32, 64, 128, 256]


def views(floor: Floor | None, lang: str, is_recording: bool) -> list:
    """verdict, lanes, blocks, step cost, ways chart, ways table, requests table, ties (8 updates)."""
    if floor is None:
        return [label("floor_none", lang)] + [None] * 6 + [""]
    badge = label("floor_recorded", lang, date=floor.created[:10], device=device_name(floor.model.device))
    verdict = (f"*{badge}*\n\n" if is_recording else "") + fv.verdict_md(floor, lang)
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
            return (label("in_progress", lang, pct=f"{fraction:.0%}", what=what),) + (gr.skip(),) * 9
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


def build(models, model_id, lang: gr.State, tree: gr.State) -> None:
    """The chapter's components and events, inside the caller's `with gr.Tab(...)`; English first,
    then the page's language when it is known or changes. `tree`: Explore's run with its forks."""
    actions = FloorActions(models)
    live = lab_mode(models.default) == "on"      # the page is built before the model loads (app.py)
    limits = models.limits
    floor = gr.State(None)                       # the visitor's own run, once there is one
    text = {}                                    # component -> label key, for the relabel

    def named(component, key: str):
        text[component] = key
        return component
    with gr.Row():
        with gr.Column(scale=2):
            requests = named(gr.Slider(1, limits.floor_max_requests, value=D.requests, step=1,
                                       label=label("floor_ui_requests", "en"), elem_id="floor-requests"),
                             "floor_ui_requests")
            arrival = named(gr.Radio([(label(f"floor_ui_{a}", "en"), a) for a in ARRIVALS], value=D.arrival,
                                     label=label("floor_ui_arrival", "en"), elem_id="floor-arrival"), "floor_ui_arrival")
            rate = named(gr.Slider(0.5, 20, value=D.rate, step=0.5, label=label("floor_ui_rate", "en"),
                                   elem_id="floor-rate"), "floor_ui_rate")
            prompt_tokens = named(gr.Slider(32, 512, value=D.prompt_tokens, step=8,
                                            label=label("floor_ui_prompt", "en"), elem_id="floor-prompt"),
                                  "floor_ui_prompt")
            shared = named(gr.Slider(0, 256, value=D.shared_prefix, step=8, label=label("floor_ui_shared", "en"),
                                     elem_id="floor-shared"), "floor_ui_shared")
            new_tokens = named(gr.Slider(1, 128, value=D.new_tokens, step=1, label=label("floor_ui_new", "en"),
                                         elem_id="floor-new"), "floor_ui_new")
        with gr.Column(scale=2):
            page_size = named(gr.Dropdown(PAGE_SIZES, value=D.page_size, label=label("floor_ui_page", "en"),
                                          elem_id="floor-page"), "floor_ui_page")
            blocks = named(gr.Number(value=D.num_blocks, precision=0, label=label("floor_ui_blocks", "en"),
                                     elem_id="floor-blocks"), "floor_ui_blocks")
            batch_tokens = named(gr.Slider(16, 1024, value=D.max_batch_tokens, step=16,
                                           label=label("floor_ui_batch", "en"), elem_id="floor-batch"),
                                 "floor_ui_batch")
            scheduler = named(gr.Radio([(label(f"floor_ui_{k}", "en"), k) for k in SCHEDULERS], value=D.scheduler,
                                       label=label("floor_ui_scheduler", "en"), elem_id="floor-scheduler"),
                              "floor_ui_scheduler")
            with gr.Row():
                run = named(gr.Button(label("floor_ui_run", "en"), variant="primary", elem_id="floor-run",
                                      visible=live), "floor_ui_run")
                stop = named(gr.Button(label("lab_stop", "en"), variant="stop", elem_id="floor-stop", visible=live),
                             "lab_stop")
            branches = named(gr.Button(label("floor_ui_branches", "en"), elem_id="floor-branches", visible=live,
                                       size="sm"), "floor_ui_branches")
            download = named(gr.File(label=label("floor_ui_download", "en"), interactive=False,
                                     elem_id="floor-download", visible=False), "floor_ui_download")
            upload = named(gr.File(label=label("floor_ui_upload", "en"), file_types=[".json"], type="filepath",
                                   elem_id="floor-upload", height=90), "floor_ui_upload")
    first = views(recordings.floor(), "en", True)
    verdict = gr.Markdown(first[0], elem_id="floor-verdict")
    lanes = gr.Plot(first[1], show_label=False, elem_id="floor-lanes")
    with gr.Row():          # the blocks beside what a step costs: why sharing and batching pay
        blocks_plot = gr.Plot(first[2], show_label=False, elem_id="floor-blocks-plot", scale=3)
        step_plot = gr.Plot(first[3], show_label=False, elem_id="floor-step", scale=2)
    modes_plot = gr.Plot(first[4], show_label=False, elem_id="floor-modes")
    modes_table = gr.Dataframe(first[5], interactive=False, elem_id="floor-modes-table", wrap=True)
    requests_table = gr.Dataframe(first[6], interactive=False, elem_id="floor-requests-table", wrap=True)
    ties = gr.Markdown(first[7], elem_id="floor-ties")
    drawn = [lanes, blocks_plot, step_plot, modes_plot, modes_table, requests_table, ties]
    inputs = [requests, arrival, rate, prompt_tokens, shared, new_tokens, page_size, blocks, batch_tokens, scheduler]
    go = run.click(on_gpu(actions.run, duration=600), [*inputs, lang, model_id, gr.State(None)],
                   [verdict, floor, *drawn, download], concurrency_limit=1, concurrency_id="lab", api_visibility="private")
    forks = branches.click(on_gpu(actions.run, duration=600), [*inputs, lang, model_id, tree],
                           [verdict, floor, *drawn, download], concurrency_limit=1, concurrency_id="lab",
                           api_visibility="private")
    stop.click(actions.stop, None, None, queue=False, api_visibility="private", **stop_cancels(go, forks))

    def show_file(path, lang_v):
        """A serving-floor file from disk (`python -m engine floor --out`, or a run's download), read
        like a trace upload: size-capped, checked field against field, refused in the page's language."""
        shown = read_upload(path, limits, lang_v, reader=read_floor, unusable="floor_unusable")
        drawn = views(shown, lang_v, False)
        return (drawn[0], shown, *drawn[1:])

    def check_file(path, lang_v) -> dict:
        """A file that is not a usable serving-floor file is refused on the upload box, before anything changes."""
        try:
            read_upload(path, limits, lang_v, reader=read_floor, unusable="floor_unusable")
        except gr.Error as exc:
            return {upload: gr.validate(False, exc.message)}
        return {upload: gr.validate(True, "")}
    upload.upload(show_file, [upload, lang], [verdict, floor, *drawn], validator=check_file,
                  api_visibility="private")

    def relabel(own, lang_v) -> dict:
        updates = {c: gr.update(label=label(k, lang_v)) for c, k in text.items() if not isinstance(c, gr.Button)}
        updates.update({run: gr.update(value=label("floor_ui_run", lang_v)),
                        branches: gr.update(value=label("floor_ui_branches", lang_v)),
                        stop: gr.update(value=label("lab_stop", lang_v)),
                        arrival: gr.update(label=label("floor_ui_arrival", lang_v),
                                           choices=[(label(f"floor_ui_{a}", lang_v), a) for a in ARRIVALS]),
                        scheduler: gr.update(label=label("floor_ui_scheduler", lang_v),
                                             choices=[(label(f"floor_ui_{k}", lang_v), k) for k in SCHEDULERS])})
        updates.update(dict(zip([verdict, *drawn], views(own or recordings.floor(), lang_v, own is None))))
        return updates
    lang.change(relabel, [floor, lang], [*text, verdict, *drawn], queue=False, api_visibility="private")
