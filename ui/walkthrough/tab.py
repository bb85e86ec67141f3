"""The Walkthrough tab: the whole story step by step, most on one prompt, for a talk or a first visit.

Each step shows our explanation (English or Chinese) next to the live visual of its chapter (the
step table, ui/walkthrough/steps.py), drawn from traces recorded with our own CLI (assets/traces/,
`make traces`), so it works at once and without running the model; "Run live" replaces the
recording with a run on this machine.
Keys: arrows or PageUp/PageDown (what presentation clickers send) press the visible Back/Next.
"""

from __future__ import annotations

import time

import gradio as gr

from engine import EngineError
from engine.run.request import SIDE_BY_SIDE
from engine.run.side_by_side import interleave
from engine.schema.trace import Settings
from viz.fmt import device_name

from ui.chapters.common import ENGINE, PRIVATE
from ui.host import recordings
from ui.host.errors import refused
from ui.host.gpu import on_gpu
from ui.host.models import torch_side
from ui.host.recordings import prompt_of, recorded
from ui.page.bar import walkthrough_bar
from ui.page.i18n import STRINGS, t, text
from ui.walkthrough.steps import LAB_STEP, STEPS, drawn
from ui.page.plot import Plot
from ui.page.same_draw import SameDraws

SAME = SameDraws()      # the recording's steps, per language and presenter mode

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
LIVE_REDRAW_S = 0.5                  # how often a live run redraws the charts it streams into
NEXT_TOKENS = 24                     # the next-token example's length, as recorded (assets/traces/manifest.json)


class Walkthrough:
    def __init__(self, models):
        self.models = models
        # where each step's parts start among `views`' values (the source line comes first)
        self.first_output = {i: 1 + sum(len(s.parts) for s in STEPS[:i]) for i in range(len(STEPS))}
        self.outputs = 1 + sum(len(s.parts) for s in STEPS)

    def views(self, live: dict | None, lang: str, present: bool) -> list:
        """Every step's visual, from the live traces if there are any, else the recording (drawn
        once per language and mode: ui/page/same_draw.py)."""
        if not live and self.models.loaded:
            return SAME.get((self.models.default, lang, present), lambda: self.drawn_views(None, lang, present))
        return self.drawn_views(live, lang, present)

    def drawn_views(self, live: dict | None, lang: str, present: bool) -> list:
        traces = live or recorded(lang)
        example = traces["next"]
        if live:
            lab = recordings.lab()
            # presenter mode: one line (two pushed step 4 past a projector's 720 px)
            source = text("wt_live_present" if present else "wt_live", lang).format(date=str((lab or {}).get("created", "?"))[:10], lab_step=LAB_STEP + 1)
        else:
            source = text("wt_recorded", lang).format(date=example.created[:10], device=device_name(example.model.device))
        return [source, *(view for i in range(len(STEPS)) for view in self.step_views(i, traces, lang, present))]

    def step_views(self, i: int, traces: dict, lang: str, present: bool) -> list:
        return drawn(i, traces, lang, present, self.models)

    def streaming(self, traces: dict, follows: str, n: int, lang: str, present: bool) -> list:
        """The page's update while a live run streams: the count so far, and the steps that follow
        `follows` ("prompt", "next" or "pair") redrawn; nothing else changes."""
        out = [gr.skip()] * self.outputs
        out[0] = text("wt_running", lang).format(n=n)
        for i, step in enumerate(STEPS):
            if step.follows == follows:
                views = self.step_views(i, traces, lang, present)
                out[self.first_output[i]:self.first_output[i] + len(views)] = views
        return [gr.skip(), *out]

    def run_live(self, lang, present, model_id, request: gr.Request):
        """Run the walkthrough now on the visitor's model: the next-token example as raw text, then
        chapter 7's question in normal and reasoning mode side by side; then redraw every step.
        While it runs, the tokens stream into the steps' visuals (whichever step is on screen),
        charts about twice a second (not per token)."""
        shown = 0.0

        def due(force: bool) -> bool:
            nonlocal shown
            if force or time.monotonic() - shown >= LIVE_REDRAW_S:
                shown = time.monotonic()
                return True
            return False
        try:
            engine = self.models.get(model_id, lang)
            traces = dict(recorded(lang))
            events = torch_side("engine.run.generate").stream_trace(engine, prompt_of(lang), Settings(
                max_new_tokens=NEXT_TOKENS, chat_template=False, attention=True, logit_lens=True))
            for event in events:
                traces["next"] = event.trace
                if event.kind == "tokens" and due(True):      # the prompt's tokens are known before any pass
                    yield self.streaming(traces, "prompt", 0, lang, present)
                elif event.trace.steps and due(event.kind == "done"):
                    yield self.streaming(traces, "next", len(event.trace.steps), lang, present)
            done, s = len(traces["next"].steps), SIDE_BY_SIDE
            for normal, reasoning, finished in interleave(engine, prompt_of(lang, "question"), s.thinking_budget,
                                                          s.answer_tokens):
                traces.update(normal=normal, reasoning=reasoning)
                if finished:
                    yield [traces, *self.views(traces, lang, present)]
                elif due(False):
                    yield self.streaming(traces, "pair", done + len(normal.steps) + len(reasoning.steps), lang, present)
        except EngineError as exc:
            raise refused(exc, lang) from None


def narration(i: int) -> None:
    """Step i's words: the chapter's one-line introduction, the narration, the details a projector
    leaves out, and what the step's numbers are (measured, formula, projection)."""
    gr.Markdown(t(f"wt_{i}_intro"), elem_classes="tbt-wt-intro")
    gr.Markdown(t(f"wt_{i}_text"), elem_classes="tbt-wt-text")
    if f"wt_{i}_more" in STRINGS:
        gr.Markdown(t(f"wt_{i}_more"), elem_classes="tbt-wt-more")
    gr.Markdown(t(f"wt_{i}_legend"), elem_classes="tbt-hint tbt-chapter-legend")


def component(part) -> gr.components.Component:
    if part.kind == "plot":
        return Plot(show_label=False, elem_id=f"wt-{part.name}")
    if part.kind == "html":
        return gr.HTML(elem_id=f"wt-{part.name}")
    return gr.Markdown(elem_id=f"wt-{part.name}", elem_classes="tbt-hint" if part.hint else None)


def visual(i: int) -> list:
    """The components that show step i's chapter, as its table entry lists them (a part marked
    `row` goes beside the one before it)."""
    parts, made, k = STEPS[i].parts, [], 0
    while k < len(parts):
        if k + 1 < len(parts) and parts[k + 1].row:
            with gr.Row():
                made += [component(parts[k]), component(parts[k + 1])]
            k += 2
        else:
            made.append(component(parts[k]))
            k += 1
    return made


def step_page(i: int, walk) -> list:
    """Step i: its narration and Back/Next beside its visual; returns the visual's components."""
    last = len(STEPS) - 1
    with gr.Step(t(f"wt_{i}_title"), id=i, elem_id=f"wt-step-{i}"):
        with gr.Row(equal_height=False):
            with gr.Column(scale=5, min_width=300):
                narration(i)
                with gr.Row():
                    back = gr.Button(t("back"), size="sm", elem_classes="tbt-back", interactive=i > 0)
                    forward = gr.Button(t("next"), size="sm", elem_classes="tbt-next", interactive=i < last)
            with gr.Column(scale=7, min_width=480, elem_classes="tbt-wt-visual"):
                shown = visual(i)
        back.click(lambda: gr.Walkthrough(selected=max(i - 1, 0)), None, walk, queue=False, **PRIVATE)
        forward.click(lambda: gr.Walkthrough(selected=min(i + 1, last)), None, walk, queue=False, **PRIVATE)
    return shown


def build(models, lang, present, model_id) -> tuple:
    """Lay out the walkthrough inside the current container; returns (Walkthrough, live state,
    the components `views` fills, in order)."""
    wt = Walkthrough(models)
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
        for i in range(len(STEPS)):
            outputs += step_page(i, walk)
    gr.HTML("", js_on_load=KEYS_JS, visible=True, elem_id="wt-keys")
    assert wt.outputs == len(outputs)
    run_live.click(on_gpu(wt.run_live, 120), [lang, present, model_id], [live, *outputs], **ENGINE, **PRIVATE)
    use_recording.click(lambda lg, pr: [None, *wt.views(None, lg, pr)], [lang, present], [live, *outputs], **PRIVATE)
    return wt, live, outputs
