"""The Speed chapter's profile: where the visitor's run spent its time, op by op, beside the roofline.

The profile is measured after the run, never during it (engine/profile/run.py replays the run's
prefill and one decode step with timers): the chapters are drawn first, then this panel's event, in
the page's "engine" concurrency group, writes the download with its logit lens (engine/model/lens.py)
and measures the profile, with no more timed passes than the run's own cost affords
(run.affordable_repeats); a run whose replay would cost more than the run itself is profiled on
demand (the button), and the note says so. Before any run the panel shows the walkthrough recording's profile
(assets/profile/, made by `make traces`), labelled as recorded, so the charts are never empty.
"""

from __future__ import annotations

from html import escape

import gradio as gr

from engine.errors import EngineError
from engine.schema.trace import Trace
from viz.charts import profile as charts
from viz.fmt import device_name
from viz.charts.notice import notice_chart
from viz.text.profile_gaps import gaps_md

from ui.chapters.common import ENGINE, PRIVATE
from ui.host.errors import refused
from ui.host.gpu import on_gpu
from ui.host import recordings
from ui.page.i18n import t, text
from ui.host.models import torch_side
from ui.page.plot import Plot

GPU_SECONDS = 60


def measure_profile(engine, trace: Trace, step: int | None, repeats: int | None = None) -> dict:
    """The profile of `trace` (engine/profile) with its projection onto the roofline's GPUs and models."""
    run, project, ops = (torch_side(f"engine.profile.{m}") for m in ("run", "project", "ops"))
    result = run.profile_trace(engine, trace, step, **({"repeats": repeats} if repeats else {}))
    result["projection"] = project.projection(ops.Dims.of_config(engine.model.config), engine.info.id,
                                              result["phases"]["prefill"]["tokens"], result["phases"]["decode"]["keys"])
    return result


def note_md(profile: dict, lang: str, recording: bool) -> str:
    """What the charts show: which run, which step, where and when, and how it was measured."""
    key = "profile_note_recorded" if recording else "profile_note"
    gaps = gaps_md(profile, lang)        # why the timed pass, the pass alone and the cards differ
    return text(key, lang).format(
        prompt=escape(profile["prompt"][:80]), k=profile["decode_step"], n=profile["steps"],
        device=escape(device_name(profile["device"])), threads=profile["threads"],
        date=escape(profile.get("measured", profile["created"])[:10]), run_date=escape(profile["created"][:10]),
        repeats=profile.get("repeats", 3),
        path=text(f"profile_path_{profile['run_decode_path']}", lang)) + (f"\n\n{gaps}" if gaps else "")


class ProfilePanel:
    """Laid out inside the Speed tab; `after_run` follows each run, `button` profiles again."""

    def __init__(self, models, trace_file, lang: gr.State):
        """`trace_file(trace)`: the run's download with its logit lens (ui/chapters/run.py)."""
        self.models, self.trace_file, self.lang = models, trace_file, lang
        self.state = gr.State(None)                       # the visitor's latest profile (a plain dict)
        first = recordings.profile("en")
        gr.Markdown(t("profile_heading"), elem_classes="tbt-intro")
        with gr.Row():
            self.note = gr.Markdown(note_md(first, "en", True) if first else "", elem_id="profile-note", min_width=300)
            self.button = gr.Button(t("profile_button"), elem_id="profile-run", scale=0, min_width=220)
        views = self.views(first, "en", recording=True)
        self.prefill = Plot(views[1], show_label=False, elem_id="profile-prefill")
        self.decode = Plot(views[2], show_label=False, elem_id="profile-decode")
        with gr.Accordion(t("profile_projection"), open=False):
            self.projection = Plot(views[3], show_label=False, elem_id="profile-projection")

    @property
    def outputs(self) -> list:
        return [self.state, self.note, self.prefill, self.decode, self.projection]

    def views(self, profile: dict | None, lang: str, recording: bool = False) -> list:
        """[note, prefill chart, decode chart, projection chart] of `profile`."""
        if profile is None:
            empty = notice_chart(charts.label("prof_none", lang))
            return ["", empty, empty, empty]

        def draw(fn, *args):
            try:
                return fn(profile, *args, lang=lang)
            except (ValueError, KeyError) as exc:
                return notice_chart(str(exc))
        return [note_md(profile, lang, recording), draw(charts.profile_chart, "prefill"),
                draw(charts.profile_chart, "decode"), draw(charts.projection_chart)]

    def relabel(self, profile, lang):
        """Redrawn in the page's language: the visitor's own profile, else the recording's."""
        own = profile is not None
        return self.views(profile if own else recordings.profile(lang), lang, recording=not own)

    def after_run(self, tree, trace, lang):
        """After a run is drawn: its download with the logit lens, then its profile (middle step).
        A served run or a file has nothing to replay here: the panel keeps what it shows."""
        download = self.trace_file(tree or trace)
        engine = self.models.of_trace(trace) if trace is not None else None
        if engine is None or trace.model.source == "served" or len(trace.steps) < 2:
            return [download, *[gr.skip()] * len(self.outputs)]
        run = torch_side("engine.profile.run")
        repeats = run.affordable_repeats(trace)
        if not repeats:                   # its replay would cost more than the run: on demand only
            said = text("profile_skipped", lang).format(replay=f"{run.replay_ms(trace, 1) / 1000:.1f}",
                                                        run=f"{sum(s.ms for s in trace.steps) / 1000:.1f}")
            return [download, gr.skip(), said, *[gr.skip()] * 3]
        try:
            profile = measure_profile(engine, trace, None, repeats)
        except EngineError as exc:
            raise refused(exc, lang) from None
        return [download, profile, *self.views(profile, lang)]

    def measure(self, trace, step, lang):
        """The button: profile the run on show at the decode step on show (step 0, the prefill's own
        token, profiles decode step 1)."""
        if trace is None:
            raise gr.Error(charts.label("prof_none", lang))
        engine = self.models.of_trace(trace)
        try:
            if engine is None or trace.model.source == "served":
                raise EngineError("the profile replays a run of this page's model", "profile_other_model")
            profile = measure_profile(engine, trace, max(int(step or 0), 1))
        except (EngineError, ValueError, TypeError) as exc:
            raise refused(exc, lang) from None
        return [profile, *self.views(profile, lang)]

    def wire(self, run_drawn, trace: gr.State, tree: gr.State, step: gr.Slider, download: gr.File) -> None:
        """`run_drawn`: the event after which a finished run's chapters are on screen."""
        run_drawn.then(on_gpu(self.after_run, GPU_SECONDS), [tree, trace, self.lang], [download, *self.outputs],
                       **ENGINE, **PRIVATE)
        self.button.click(on_gpu(self.measure, GPU_SECONDS), [trace, step, self.lang], self.outputs, **ENGINE, **PRIVATE)
        self.lang.change(self.relabel, [self.state, self.lang], self.outputs[1:], **PRIVATE)
