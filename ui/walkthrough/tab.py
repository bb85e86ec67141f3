"""The Walkthrough: the whole story in ten steps, most on one prompt, for a talk or a first visit.

Each step shows our explanation (English or Chinese) next to the live visual of its chapter,
drawn from traces recorded with our own CLI (assets/traces/, `make traces`), so it works at once
and without running the model; "Run live" replaces the recording with a run on this machine.
Keys: arrows or PageUp/PageDown (what presentation clickers send) press the visible Back/Next.
"""

from __future__ import annotations

import time

import gradio as gr

from engine import EngineError
from engine.run.side_by_side import interleave
from engine.schema.trace import Settings
from viz.charts import attention, decode, kv, speed
from viz import html
from viz.charts import reasoning as rviz
from viz.charts import lab as lab_viz
from viz.charts import floor as floor_viz
from viz.charts import profile as profile_viz
from viz.fmt import device_name
from viz.text.labels import label
from viz.charts.sampling import playground_chart
from viz.charts.theme import presentable

from ui.host.errors import refused
from ui.host.gpu import on_gpu
from ui.host import recordings
from ui.host.recordings import prompt_of, recorded
from ui.page.i18n import STRINGS, t, text
from ui.page.bar import walkthrough_bar
from ui.chapters.reasoning import verdict_md
from ui.host.models import torch_side
from ui.host.runs import ENGINE_CONCURRENCY
from ui.chapters.views import chart_or_notice, first_readable_step, least_sure_step

STEPS = 10
KEYS_JS = """
document.addEventListener('keydown', (e) => {
  if (e.target.closest('input, textarea, select, [contenteditable]')) return;
  const forward = ['ArrowRight', 'PageDown'].includes(e.key), back = ['ArrowLeft', 'PageUp'].includes(e.key);
  if (!forward && !back) return;
  const buttons = [...document.querySelectorAll(forward ? '.tbt-next' : '.tbt-back')];
  const visible = buttons.find((b) => b.offsetParent !== null);
  if (visible) { e.preventDefault(); visible.click(); }
});
"""


KINDS = ("next", "normal", "reasoning")
COMPONENTS = (1, 1, 1, 2, 2, 2, 4, 1, 2, 2)  # the components `_visual(i)` lays out for each step
LIVE_REDRAW_S = 0.5                  # how often a live run redraws the charts it streams into
# chart heights (px) on a projector, per step: shorter where the step shows more under its chart
PRESENT_HEIGHTS = {1: 250, 2: 250, 3: 200, 4: 110, 5: 230, 6: 118, 7: 230, 8: 200, 9: 230}
# the visual's box at 1280 px, the width a chart takes whole, its axes and legend included
# (viz.charts.theme.presentable); the sampling step's four panels share it beside their token labels
BOX_WIDTH = 664         # 686 px there, less the chart's own padding
PANEL_WIDTH = {True: 118, False: 132}      # presenter (larger labels), normal
LAB_STEP = 5                         # the step that shows the lab's recording, even after a live run
FLOOR_STEP = 8                       # the serving floor's recorded workload, even after a live run
PROFILE_STEP = 9                     # where the time goes: the recording's profile, even after a live run
NEXT_TOKENS = 24                     # the next-token example's length, as recorded (assets/traces/manifest.json)


class Walkthrough:
    def __init__(self, models, actions):
        self.models, self.actions = models, actions
        self.outputs = 1 + sum(COMPONENTS)      # how many components `views` fills: the source line, then
        # each step's (step -> index of its first component)
        self.first_output = {i: 1 + sum(COMPONENTS[:i]) for i in range(STEPS)}

    def views(self, live: dict | None, lang: str, present: bool) -> list:
        """Every step's visual, from the live traces if there are any, else the recording."""
        traces = live or recorded(lang)
        lab = recordings.lab()
        example = traces["next"]
        source = (text("wt_live", lang).format(date=str((lab or {}).get("created", "?"))[:10], lab_step=LAB_STEP + 1) if live else
                  text("wt_recorded", lang).format(date=example.created[:10], device=device_name(example.model.device)))
        return [source, *(view for i in range(STEPS) for view in self.step_views(i, traces, lang, present))]

    def step_views(self, i: int, traces: dict, lang: str, present: bool) -> list:
        """Step i's visual (what `_visual(i)` laid out), drawn from `traces` ("next", "normal",
        "reasoning"); a trace still being generated is drawn as far as it has got."""
        playground = torch_side("engine.run.sampling").playground    # transformers' own warpers
        example, normal, reasoning = traces["next"], traces["normal"], traces["reasoning"]
        # on a projector every step fits 1280x720 beside the narration: charts shorter where the
        # step shows more under them
        size = (BOX_WIDTH, PRESENT_HEIGHTS.get(i, 230) if present else 260)

        def draw(fn, *args, **kwargs):
            return presentable(chart_or_notice(fn, *args, lang=lang, **kwargs), size, big=present)

        if i == 0:
            return [html.compare_html(*self.actions.comparison(example), lang=lang)]
        if i == 1:
            return [draw(attention.heatmap, example, example.model.layers // 2, None)]
        if i == 2:
            return [draw(kv.kv_growth_chart, example)]
        if i == 3:
            if not example.steps:
                return [gr.skip(), html.output_html(example, lang=lang)]
            # the step the narration talks about: the word right after "then he", or the first step
            # that reads as text (the Chinese answer's first steps are byte pieces of characters,
            # and so are their candidates); while a live run streams, the newest step
            step = first_readable_step(example) if example.summary else len(example.steps) - 1
            return [draw(decode.candidates_chart, example, step, top=10 if present else None),
                    html.output_html(example, step, lang=lang)]
        if i == 4:
            return [draw(speed.timeline_chart, example), html.speed_html(example, lang=lang, compact=present)]
        if i == LAB_STEP:
            lab = recordings.lab()
            return [draw(self.lab_chart, lab), self.weights_md(lab, lang, present)]
        if i == 6:
            return [draw(rviz.compare_timeline, normal, reasoning), html.reasoning_html(normal, lang),
                    html.reasoning_html(reasoning, lang),
                    verdict_md(normal, reasoning, lang, brief=present) if normal.summary and reasoning.summary else ""]
        if i == PROFILE_STEP:     # the recording's profile (Explore → 5 profiles the visitor's own run)
            profile = recordings.profile(lang)
            return [draw(profile_viz.bound_chart, profile), profile_viz.summary_md(profile, lang)]
        if i == FLOOR_STEP:       # the serving floor: always its recording (a live run is one request)
            floor = recordings.floor()
            if floor is None:
                return [None, label("floor_none", lang)]
            return [draw(floor_viz.lanes_chart, floor), floor_viz.verdict_md(floor, lang)]
        unsure = least_sure_step(example)
        rows = playground(example.steps[unsure].candidates, 1.0, 10, 0.9) if example.steps else []
        return [draw(playground_chart, rows[:10], width=PANEL_WIDTH[present])]

    @staticmethod
    def weights_md(lab: dict | None, lang: str, present: bool) -> str:
        """What the recorded smaller weight formats cost in quality and, off a projector (where the
        narration says it), whether each was faster or slower per token here, as measured."""
        if not lab:
            return ""
        try:
            speed = "" if present else "  \n" + lab_viz.weights_summary(lab, lang)
            return lab_viz.quality_line(lab, lang) + speed
        except ValueError:              # a recording without the weights experiment
            return ""

    @staticmethod
    def lab_chart(lab: dict | None, lang: str):
        if not lab:
            raise ValueError(text("wt_no_lab", lang))
        return lab_viz.kv_chart(lab, lang=lang)

    def run_live(self, lang, present, model_id, request: gr.Request):
        """Run the walkthrough now on the visitor's model: the next-token example as raw text, then
        chapter 7's question in normal and reasoning mode side by side; then redraw every step.
        While it runs, the tokens stream into the steps' visuals (whichever step is on screen):
        steps 1-5 follow the example, step 7 the two modes."""
        shown = 0.0

        def streaming(traces: dict, steps: tuple[int, ...], n: int, force: bool = False) -> list:
            nonlocal shown
            out = [gr.skip()] * self.outputs
            out[0] = text("wt_running", lang).format(n=n)
            if force or time.monotonic() - shown >= LIVE_REDRAW_S:   # charts ~2x a second, not per token
                shown = time.monotonic()
                for i in steps:
                    start = self.first_output[i]
                    views = self.step_views(i, traces, lang, present)
                    out[start:start + len(views)] = views
            return [gr.skip(), *out]

        try:
            engine = self.models.get(model_id, lang)
            traces = dict(recorded(lang))
            events = torch_side("engine.run.generate").stream_trace(engine, prompt_of(lang), Settings(
                max_new_tokens=NEXT_TOKENS, chat_template=False, attention=True, logit_lens=True))
            for event in events:
                traces["next"] = event.trace
                if event.kind == "tokens":                 # the prompt's tokens are known before any pass
                    yield streaming(traces, (0,), 0, force=True)
                elif event.trace.steps:
                    yield streaming(traces, (1, 2, 3, 4), len(event.trace.steps), force=event.kind == "done")
            done = len(traces["next"].steps)
            for normal, reasoning, finished in interleave(engine, prompt_of(lang, "question"), 48, 40):
                traces.update(normal=normal, reasoning=reasoning)
                if finished:
                    yield [traces, *self.views(traces, lang, present)]
                else:
                    yield streaming(traces, (6,), done + len(normal.steps) + len(reasoning.steps))
        except EngineError as exc:
            raise refused(exc, lang) from None


def build(models, actions, lang, present, model_id) -> list:
    """Lay out the walkthrough inside the current container; returns what `views` fills, in order."""
    wt = Walkthrough(models, actions)
    live = gr.State(None)
    with gr.Row():
        source = gr.Markdown(elem_id="wt-source")
        run_live = gr.Button(t("run_live"), size="sm", elem_id="wt-run-live")
        use_recording = gr.Button(t("use_recording"), size="sm", elem_id="wt-use-recording")
        wt.share_bar = walkthrough_bar()      # link to the step on screen, the deck (ui/share/links.py)
    wt.share_bar.boxes()
    gr.Markdown(t("keys_hint"), elem_classes="tbt-hint")
    outputs = [source]
    with gr.Walkthrough(selected=0, elem_id="walkthrough") as walk:
        wt.walk = walk
        for i in range(STEPS):
            with gr.Step(t(f"wt_{i}_title"), id=i, elem_id=f"wt-step-{i}"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=5, min_width=300):
                        # the chapter's one-line introduction leads (not on a projector: the presenter says it)
                        gr.Markdown(t(f"wt_{i}_intro"), elem_classes="tbt-wt-intro")
                        gr.Markdown(t(f"wt_{i}_text"), elem_classes="tbt-wt-text")
                        if f"wt_{i}_more" in STRINGS:      # the details; a projector shows the narration only
                            gr.Markdown(t(f"wt_{i}_more"), elem_classes="tbt-wt-more")
                        # what the step's numbers are (measured, formula, projection); a hint, so not on a projector
                        gr.Markdown(t(f"wt_{i}_legend"), elem_classes="tbt-hint tbt-chapter-legend")
                        with gr.Row():
                            back = gr.Button(t("back"), size="sm", elem_classes="tbt-back",
                                             interactive=i > 0)
                            forward = gr.Button(t("next"), size="sm", elem_classes="tbt-next",
                                                interactive=i < STEPS - 1)
                    with gr.Column(scale=7, min_width=480, elem_classes="tbt-wt-visual"):
                        visual = _visual(i)
                        assert len(visual) == COMPONENTS[i] and wt.first_output[i] == len(outputs), i
                        outputs += visual
                back.click(lambda i=i: gr.Walkthrough(selected=max(i - 1, 0)), None, walk, queue=False,
                           api_visibility="private")
                forward.click(lambda i=i: gr.Walkthrough(selected=min(i + 1, STEPS - 1)), None, walk,
                              queue=False, api_visibility="private")
    gr.HTML("", js_on_load=KEYS_JS, visible=True, elem_id="wt-keys")

    assert wt.outputs == len(outputs)
    run_live.click(on_gpu(wt.run_live, 120), [lang, present, model_id], [live, *outputs], concurrency_id="engine",
                   concurrency_limit=ENGINE_CONCURRENCY, api_visibility="private")
    use_recording.click(lambda lg, pr: [None, *wt.views(None, lg, pr)], [lang, present], [live, *outputs],
                        api_visibility="private")
    return wt, live, outputs


def _visual(i: int) -> list:
    """The components that show step i's chapter."""
    def plot(name):
        return gr.Plot(show_label=False, elem_id=f"wt-{name}")

    if i == 0:
        return [gr.HTML(elem_id="wt-compare")]
    if i == 1:
        return [plot("heatmap")]
    if i == 2:
        return [plot("kv")]
    if i == 3:
        return [plot("candidates"), gr.HTML(elem_id="wt-output")]
    if i == 4:
        return [plot("timeline"), gr.HTML(elem_id="wt-speed")]
    if i == 5:
        return [plot("lab"), gr.Markdown(elem_id="wt-quality", elem_classes="tbt-hint")]
    if i == 6:
        chart = plot("reasoning-chart")
        verdict = gr.Markdown(elem_id="wt-verdict")          # right under the chart, before the texts
        with gr.Row():
            columns = [gr.HTML(elem_id="wt-normal"), gr.HTML(elem_id="wt-reasoning")]
        return [chart, *columns, verdict]
    if i == PROFILE_STEP:
        return [plot("profile"), gr.Markdown(elem_id="wt-profile-note", elem_classes="tbt-hint")]
    if i == FLOOR_STEP:
        return [plot("floor"), gr.Markdown(elem_id="wt-floor-verdict", elem_classes="tbt-hint")]
    return [plot("playground")]
