"""Chapter 6, the acceleration lab tab: seven experiments, each with a Run button, a chart, a table and
a two-line reading of its result; a Stop button and a JSON export of everything measured so far.

Each visitor's results live in a gr.State (plain JSON-ready dicts). An experiment runs in the back
room (engine/host/backroom.py): a child process with its own copy of the model, at the lowest priority,
stopped while any visitor's run is in progress and continued after, its clock leaving the pauses
out. So visitors never wait for it, and its timings are still of its own work alone. Only one lab
experiment runs at a time (its own concurrency group "lab", limit 1).
On ZeroGPU the experiment runs in the forked GPU process (it holds the engine exclusively there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from engine.host import backroom
from engine.errors import EngineError
from engine.schema.lab import EXPERIMENTS
from engine.schema.specs import PUBLIC_MODELS, short_name
from viz.charts import lab as charts
from viz.charts import lab_roofline, lab_weights
from viz.charts import lab_serving as serving
from viz.text.facts import fill
from viz.fmt import device_name
from viz.text.labels import label, progress
from viz.text.load_note import bandwidth_load_note, load_note, recorded_section_note

from ui.host.errors import internal, message, say
from ui.host.gpu import ZERO_GPU, on_gpu
from ui.page.i18n import facts
from ui.host.models import torch_side
from ui.host import recordings
from ui.host.runs import KeptFiles, StopFlags, background, closed_on_stop
from ui.chapters.common import PRIVATE, chart_or_notice, stop_button, stop_wiring, while_running
from ui.host.lab_mode import lab_mode
from ui.page.plot import Plot


@dataclass(frozen=True)
class Section:
    """One experiment's section: its elem_ids' short name, its heading and two-line explanation
    (catalogue keys), its chart and its table."""
    short: str
    heading: str
    explain: str
    chart: Callable
    table: Callable


SECTIONS = {
    "kv_cache": Section("kv", "lab_kv_heading", "lab_kv_explain", charts.kv_chart, charts.kv_table),
    "attention": Section("attn", "lab_attn_heading", "lab_attn_explain", charts.attention_chart, charts.attention_table),
    "weights": Section("weights", "lab_weights_heading", "lab_weights_explain", lab_weights.weights_chart,
                       lab_weights.weights_table),
    "roofline": Section("roofline", "lab_roof_heading", "lab_roof_explain", lab_roofline.roofline_chart, lab_roofline.roofline_table),
    "batching": Section("batch", "lab_batch_heading", "lab_batch_explain", serving.batching_chart, serving.batching_table),
    "verify": Section("verify", "lab_verify_heading", "lab_verify_explain", serving.verify_chart, serving.verify_table),
    "speculative": Section("spec", "lab_spec_heading", "lab_spec_explain", serving.speculative_chart,
                           serving.speculative_table),
}
assert tuple(SECTIONS) == EXPERIMENTS, "engine/schema/lab.py lists the lab's experiments"
SUMMARIES = {**charts.SUMMARIES, **lab_weights.SUMMARIES, **lab_roofline.SUMMARIES, **serving.SUMMARIES}


def heading_of(name: str, lang: str) -> str:
    """An experiment's heading: what the page says the lab is timing while a visitor's run waits."""
    return label(SECTIONS[name].heading, lang) if name in SECTIONS else name


META_KEYS = ("schema", "created", "quick", "model", "device", "dtype", "attn_implementation", "threads", "torch")


def merge(results: dict | None, new: dict) -> dict:
    """This visitor's results with one more experiment's section (and its timing) folded in."""
    merged = dict(results or {})
    merged.update({k: new[k] for k in META_KEYS if k in new})
    for name in new.get("experiments", []):
        if name in new:
            merged[name] = new[name]
    merged["seconds"] = {**merged.get("seconds", {}), **new.get("seconds", {})}
    merged["experiments"] = [name for name in SECTIONS if name in merged]
    merged["kv_cache_speedup"] = (merged.get("kv_cache") or {}).get("speedup")
    return merged


def _table(draw, results, lang, **kwargs):
    try:
        return draw(results, lang=lang, **kwargs)
    except ValueError:
        return None


def note_md(results: dict, name: str, lang: str) -> str:
    """The reading of one experiment's result, with how long it took."""
    try:
        text = SUMMARIES[name](results, lang)
    except ValueError as exc:
        return str(exc)
    seconds = (results.get("seconds") or {}).get(name)
    section = results.get(name) or {}
    # said when the machine was busy: while the experiment ran, or (the roofline) while its bandwidth was measured
    busy = " ".join(filter(None, (load_note(section.get("load"), lang),
                                  bandwidth_load_note(section, lang) if name == "roofline" else "")))
    return (text + (f" ({label('lab_took', lang, s=f'{seconds:.0f}')})" if seconds is not None else "")
            + (f"\n\n{busy}" if busy else ""))


class LabActions:
    def __init__(self, models):
        self.models = models
        self.flags = StopFlags()
        self.files = KeptFiles("lab", keep=32)

    def runner(self, name: str):
        def experiment(results, lang, model_choice, model_id, request: gr.Request):
            """A generator: its progress shows in the section's note, and closing it (Stop on
            ZeroGPU) stops the experiment before its next model pass (ui/host/runs.background)."""
            engine = self.models.get(model_id, lang)     # the visitor's model
            mode = lab_mode(engine.info.id)
            if mode != "on":               # hidden buttons, a hub model, or a crafted call: no run
                raise gr.Error(label(f"lab_mode_{mode}", lang), title=say("error_title", lang))

            def shown(fraction: float, text: str) -> tuple:
                return (gr.skip(), gr.skip(), gr.skip(), progress(fraction, text, lang),
                        gr.skip())
            yield shown(0.0, label("lab_run", lang))
            try:
                with self.flags.running(request) as flag:
                    def work(progress):
                        if not ZERO_GPU:          # a job that stands still while visitors run
                            # one bandwidth and FLOP/s measurement per host (engine/lab/host.py): the
                            # server's own to the job, or the job's, if it measured first, kept here
                            host = torch_side("engine.lab.host")
                            new = backroom.call("lab", name, "engine.lab:run_lab",
                                                {"only": [name], "host_figures": host.known(engine.device, engine.model.dtype)},
                                                model=engine.info.id, progress=progress, cancel=flag)
                            host.adopt(new.pop("host", None))
                            if name in new:        # how often it stood still for visitors, in its section
                                new[name]["backroom"] = new.pop("backroom")
                            return new
                        # ZeroGPU's worker is a process of its own already: there every loaded model
                        # is held, not only this one (a run on another would share the GPU)
                        with self.models.exclusive(name):
                            return torch_side("engine.lab").run_lab(engine, only=[name], cancel=flag, progress=progress)
                    new = yield from background(work, flag, shown)
            except EngineError as exc:
                raise gr.Error(label("lab_failed", lang, error=message(exc, lang)), title=say("error_title", lang)) from None
            except Exception as exc:          # a kernel or a library failed: a reference, details in the log
                raise gr.Error(label("lab_failed", lang, error=internal(f"lab experiment {name}", exc, lang)),
                               title=say("error_title", lang)) from None
            merged = merge(results, new)
            yield (merged, *section_views(merged, name, lang, model_choice),
                   gr.update(value=self.files.write_json(merged), visible=True))
        on_the_gpu = on_gpu(experiment, duration=600)           # an experiment takes minutes
        return closed_on_stop(on_the_gpu, self.flags)

    def stop(self, request: gr.Request):
        self.flags.stop_tab(request)


def roofline_choices(model_id: str) -> list[str]:
    """The models the roofline can project: this page's, then the public ones (engine/lab/roofline.py)."""
    return [short_name(model_id)] + [s.name for s in PUBLIC_MODELS]


def explain_md(heading: str, explain: str, lang: str) -> str:
    """A section's heading and its two-line explanation (the second line in italics)."""
    first, second = fill(label(explain, lang), facts(lang)).split("\n")    # {k_min} …: the recorded lab
    return f"### {label(heading, lang)}\n{first}  \n*{second}*"


def recorded_md(recorded: dict, name: str, lang: str) -> str:
    """The reading of a recorded result, under a badge that says when and where it was measured."""
    badge = label("lab_recorded_note", lang, date=str(recorded.get("created", ""))[:10],
                  device=device_name(recorded.get("device", "?")), model=str(recorded.get("model", "")).split(":")[-1])
    # the load it was recorded under (a busy one is said by note_md), or that the recording kept none
    load = recorded_section_note(recorded.get(name), name, lang)
    return f"{badge}  \n{note_md(recorded, name, lang)}" + (f"\n\n{load}" if load else "")


def section_views(results: dict, name: str, lang: str, model: str | None = None) -> tuple:
    """(chart, table, note) of one experiment: this visitor's result, else the recording (with its
    badge), never an empty box; placeholders only if neither exists."""
    extra = {"model": model} if name == "roofline" else {}
    section = SECTIONS[name]
    recorded = recordings.lab()
    shown = results if (results or {}).get(name) else recorded if recorded and recorded.get(name) else None
    if shown is None:
        return None, None, label("lab_not_run_yet", lang)
    note = note_md(shown, name, lang) if shown is results else recorded_md(shown, name, lang)
    return chart_or_notice(section.chart, shown, lang=lang, **extra), _table(section.table, shown, lang, **extra), note


class LabTab:
    """The tab's components and events, inside the caller's `with gr.Tab(...)`. The text starts in
    English and follows the page's language (`lang`) when it changes, charts included. Experiments
    run on the visitor's model (`model_id`); what the page offers follows the host's default."""

    def __init__(self, models, model_id, lang: gr.State):
        self.actions, self.lang = LabActions(models), lang
        self.results = gr.State({})
        self.mode = lab_mode(models.default)       # the page is built before the model loads (app.py)
        live = self.mode == "on"
        self.intro = gr.Markdown(self.intro_md("en"), elem_id="lab-intro")
        with gr.Row():
            self.stop = stop_button(label("lab_stop", "en"), "lab-stop", scale=0, min_width=120, visible=live)
            # shown once this visitor has measured something (an empty file box says nothing)
            self.export = gr.File(label=label("lab_export", "en"), interactive=False, elem_id="lab-export",
                                  visible=False)
        self.choices = roofline_choices(models.default)
        self.parts = {name: self.section(name, live) for name in SECTIONS}
        runs = [self.parts[name]["run"].click(
            while_running(self.actions.runner(name)), [self.results, lang, self.parts[name]["pick"] or gr.State(None),
                                                       model_id],
            [self.results, *(self.parts[name][k] for k in ("plot", "frame", "note")), self.export, self.stop],
            concurrency_limit=1, concurrency_id="lab", show_progress="hidden", **PRIVATE) for name in SECTIONS]
        stop_wiring(self.stop, self.actions.stop, runs)
        self.wire()

    def intro_md(self, lang: str) -> str:
        said = label("lab_intro", lang)
        return said if self.mode == "on" else f"{said}\n\n**{label(f'lab_mode_{self.mode}', lang)}**"

    def section(self, name: str, live: bool) -> dict:
        """One experiment: its explanation, Run, (the roofline's model choice), note, chart and table,
        first showing the recording with its badge (no empty box)."""
        section = SECTIONS[name]
        explanation = gr.Markdown(explain_md(section.heading, section.explain, "en"), elem_id=f"lab-{section.short}-explain")
        with gr.Row():
            run = gr.Button(label("lab_run", "en"), variant="primary", elem_id=f"lab-{section.short}-run", scale=0,
                            min_width=120, visible=live)
            pick = gr.Dropdown(self.choices, value=self.choices[0], label=label("lab_model_pick", "en"),
                               elem_id="lab-roofline-model", scale=1) if name == "roofline" else None
            chart, frame, note = section_views({}, name, "en", self.choices[0])
            note = gr.Markdown(note, elem_id=f"lab-{section.short}-note", min_width=280)   # below Run on a phone
        plot = Plot(chart, show_label=False, elem_id=f"lab-{section.short}-plot")
        frame = gr.Dataframe(frame, interactive=False, elem_id=f"lab-{section.short}-table", wrap=True)
        return {"explain": explanation, "run": run, "pick": pick, "note": note, "plot": plot, "frame": frame}

    def relabel(self, results, lang: str, model) -> dict:
        """Every text and chart of the tab in the page's language."""
        roof = self.parts["roofline"]
        updates = {self.intro: self.intro_md(lang), self.stop: gr.update(value=label("lab_stop", lang)),
                   self.export: gr.update(label=label("lab_export", lang)),
                   roof["pick"]: gr.update(label=label("lab_model_pick", lang))}
        for name, section in SECTIONS.items():
            p = self.parts[name]
            chart, frame, note = section_views(results, name, lang, model)
            updates.update({p["explain"]: explain_md(section.heading, section.explain, lang),
                            p["run"]: gr.update(value=label("lab_run", lang)), p["note"]: note})
            updates.update({k: v for k, v in ((p["plot"], chart), (p["frame"], frame)) if v is not None})
        return updates

    def wire(self) -> None:
        roof = self.parts["roofline"]
        # choosing another model redraws the roofline from the results already measured (no model run)
        roof["pick"].change(lambda r, lang_v, m: [v if v is not None else gr.skip()
                                                  for v in section_views(r, "roofline", lang_v, m)[:2]],
                            [self.results, self.lang, roof["pick"]], [roof["plot"], roof["frame"]], queue=False,
                            **PRIVATE)
        outputs = {self.intro, self.stop, self.export, roof["pick"]}
        for p in self.parts.values():
            outputs |= {p[k] for k in ("explain", "run", "note", "plot", "frame")}
        self.lang.change(self.relabel, [self.results, self.lang, roof["pick"]], outputs, queue=False, **PRIVATE)


def build(models, model_id, lang: gr.State) -> LabTab:
    return LabTab(models, model_id, lang)
