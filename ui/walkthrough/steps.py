"""The walkthrough's steps as one table, read by the tab (ui/walkthrough/tab.py) and by the offline
deck (ui/share/deck.py), so a step shows the same visual on the page and on its slide.

Each step names its chapter, the parts of its visual (a chart, HTML, Markdown), how they are drawn
from the run's traces ("next": the next-token example; "normal" and "reasoning": chapter 7's
question), the numbers its slide lists, and which live trace it follows while "Run live" streams.
The narration is the catalogue's (assets/strings/walkthrough.json): its list of steps is the
count, and a test holds this table to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.run.request import PLAYGROUND
from engine.schema.trace import Trace
from viz import html
from viz.charts import attention, decode, kv, speed
from viz.charts import floor as floor_viz
from viz.charts import lab as lab_viz
from viz.charts import lab_weights
from viz.charts import profile as profile_viz
from viz.charts import reasoning as rviz
from viz.charts.sampling import playground_chart
from viz.charts.theme import presentable
from viz.fmt import fmt_bytes, fmt_ms, fmt_p, fmt_rate
from viz.html.cards import speed_figures
from viz.out.slides import chip_label, token_chips_chart
from viz.text.labels import label
from viz.text.pieces import plain_text

from ui.chapters.common import chart_or_notice
from ui.chapters.decode import first_readable_step, least_sure_step
from ui.chapters.reasoning import verdict_md
from ui.chapters.tokens import comparison
from ui.host import recordings
from ui.host.models import torch_side
from ui.page.i18n import text

# the visual's box at 1280 px, the width a chart takes whole, its axes and legend included
# (viz.charts.theme.presentable); the sampling step's four panels share it beside their token labels
BOX_WIDTH = 664         # 686 px there, less the chart's own padding
PANEL_WIDTH = {True: 118, False: 132}      # presenter (larger labels), normal


@dataclass(frozen=True)
class Part:
    kind: str                  # "plot", "html" or "md"
    name: str                  # its elem_id is wt-<name>
    hint: bool = False         # Markdown in the small type of a hint
    row: bool = False          # beside the previous part (chapter 7's two columns)


@dataclass(frozen=True)
class Draw:
    """What a step's draw gets: the traces, the page's language, presenter mode and the chart size."""
    traces: dict[str, Trace]
    lang: str
    present: bool
    size: tuple[int, int]
    models: object = None      # the page's models (None for the deck: nothing there needs a tokenizer)

    @property
    def example(self) -> Trace:
        return self.traces["next"]

    def chart(self, fn, *args, **kwargs):
        """A chart sized for the step's box (or a notice saying why it cannot be drawn)."""
        return presentable(chart_or_notice(fn, *args, lang=self.lang, **kwargs), self.size, big=self.present)


@dataclass(frozen=True)
class Step:
    chapter: str
    parts: tuple[Part, ...]
    draw: Callable[[Draw], list]                      # one value per part
    numbers: Callable[[Draw], list[tuple[str, str]]] = lambda d: []   # the slide's measured figures
    slide: Callable[[Draw], list] | None = None       # the slide's charts where the page shows HTML
    slide_extra: Callable[[Draw], str] = lambda d: ""
    # what a live run streams into: "prompt" (its tokens, before any pass), "next" (each step),
    # "pair" (normal + reasoning) or "" (drawn once the run is done)
    follows: str = "next"
    height: int = 230          # its chart's height on a projector (shorter where more shows under it)


# --- each step's drawing ---------------------------------------------------------------------
def decode_step(d: Draw) -> int:
    """The step the narration talks about: the word right after "then he", or the first step that
    reads as text (the Chinese answer's first steps are byte pieces); while a live run streams, the newest."""
    return first_readable_step(d.example) if d.example.summary else len(d.example.steps) - 1


def _decode(d: Draw) -> list:
    if not d.example.steps:
        return [None, html.output_html(d.example, lang=d.lang)]
    step = decode_step(d)
    return [d.chart(decode.candidates_chart, d.example, step, top=10 if d.present else None),
            html.output_html(d.example, step, lang=d.lang)]


def lab_chart(lab: dict | None, lang: str):
    if not lab:
        raise ValueError(text("wt_no_lab", lang))
    return lab_viz.kv_chart(lab, lang=lang)


def weights_md(lab: dict | None, lang: str, present: bool) -> str:
    """What the recorded smaller weight formats cost in quality and, off a projector (where the
    narration says it), whether each was faster or slower per token here, as measured."""
    if not lab:
        return ""
    try:
        more = "" if present else "  \n" + lab_weights.weights_summary(lab, lang)
        return lab_weights.quality_line(lab, lang) + more
    except ValueError:              # a recording without the weights experiment
        return ""


def _lab(d: Draw) -> list:
    lab = recordings.lab()            # the lab's recording, even after a live run
    return [d.chart(lab_chart, lab), weights_md(lab, d.lang, d.present)]


def _reasoning(d: Draw) -> list:
    normal, reasoning = d.traces["normal"], d.traces["reasoning"]
    done = normal.summary and reasoning.summary
    return [d.chart(rviz.compare_timeline, normal, reasoning),
            verdict_md(normal, reasoning, d.lang, brief=d.present) if done else "",
            html.reasoning_html(normal, d.lang), html.reasoning_html(reasoning, d.lang)]


def _sampling(d: Draw) -> list:
    playground = torch_side("engine.run.sampling").playground    # transformers' own warpers
    p = PLAYGROUND
    rows = (playground(d.example.steps[least_sure_step(d.example)].candidates, p.temperature, p.top_k, p.top_p)
            if d.example.steps else [])
    return [d.chart(playground_chart, rows[:10], width=PANEL_WIDTH[d.present])]


def _floor(d: Draw) -> list:
    floor = recordings.floor()        # always its recording (a live run is one request)
    if floor is None:
        return [None, label("floor_none", d.lang)]
    return [d.chart(floor_viz.lanes_chart, floor), floor_viz.verdict_md(floor, d.lang)]


def _profile(d: Draw) -> list:
    profile = recordings.profile(d.lang)     # the recording's (Explore → 5 profiles the visitor's own run)
    return [d.chart(profile_viz.bound_chart, profile), profile_viz.summary_md(profile, d.lang)]


# --- each slide's numbers ----------------------------------------------------------------------
def _tokens_numbers(d: Draw) -> list:
    ex = d.example
    return [(label("deck_prompt_chars", d.lang), f"{len(ex.prompt.raw):,}"),
            (label("deck_prompt_tokens", d.lang), f"{len(ex.prompt.tokens):,}")]


def _prefill_numbers(d: Draw) -> list:
    p = d.example.prefill
    if not p:
        return []
    return [(label("deck_prompt_tokens", d.lang), f"{p.tokens:,}"), (label("deck_prefill", d.lang), fmt_ms(p.ms)),
            (label("tokens_per_s", d.lang), fmt_rate(p.tokens_per_s, d.lang))]


def _kv_numbers(d: Draw) -> list:
    steps = d.example.steps
    if not steps:
        return []
    return [(label("deck_kv_first", d.lang, n=steps[0].kv_tokens), fmt_bytes(steps[0].kv_bytes)),
            (label("deck_kv_last", d.lang, n=steps[-1].kv_tokens), fmt_bytes(steps[-1].kv_bytes))]


def _decode_numbers(d: Draw) -> list:
    if not d.example.steps:
        return []
    step = decode_step(d)
    chosen = d.example.steps[step]
    return [(label("deck_step", d.lang), str(step)), (label("chosen", d.lang), chip_label(chosen.token)),
            (label("p_model", d.lang), fmt_p(chosen.chosen_p_model))]


def _speed_numbers(d: Draw) -> list:
    return [(name, value) for name, value, _, _ in speed_figures(d.example, d.lang)[0][:4]]


def _reasoning_numbers(d: Draw) -> list:
    normal, reasoning = d.traces["normal"], d.traces["reasoning"]
    if not (normal.summary and reasoning.summary):
        return []
    return [(label("deck_tokens_of", d.lang, mode=label(f"mode_{mode}", d.lang)), str(len(t.steps)))
            for mode, t in (("normal", normal), ("reasoning", reasoning))]


STEPS: tuple[Step, ...] = (
    Step("tokens", (Part("html", "compare"),),
         lambda d: [html.compare_html(*comparison(d.models, d.example), lang=d.lang)],
         numbers=_tokens_numbers, slide=lambda d: [token_chips_chart(d.example, d.lang)], follows="prompt"),
    Step("prefill", (Part("plot", "heatmap"),),
         lambda d: [d.chart(attention.heatmap, d.example, d.example.model.layers // 2, None)],
         numbers=_prefill_numbers, height=250),
    Step("kv", (Part("plot", "kv"),), lambda d: [d.chart(kv.kv_growth_chart, d.example)],
         numbers=_kv_numbers, height=250),
    Step("decode", (Part("plot", "candidates"), Part("html", "output")), _decode, numbers=_decode_numbers,
         slide_extra=lambda d: f"{label('deck_answer', d.lang)} {plain_text(d.example.steps)}", height=200),
    Step("speed", (Part("plot", "timeline"), Part("html", "speed")),
         lambda d: [d.chart(speed.timeline_chart, d.example), html.speed_html(d.example, lang=d.lang, compact=d.present)],
         numbers=_speed_numbers, height=110),
    Step("lab", (Part("plot", "lab"), Part("md", "quality", hint=True)), _lab, follows=""),
    Step("reasoning", (Part("plot", "reasoning-chart"), Part("md", "verdict"), Part("html", "normal"),
                       Part("html", "reasoning", row=True)), _reasoning, numbers=_reasoning_numbers,
         follows="pair", height=118),
    Step("sampling", (Part("plot", "playground"),), _sampling, follows="",
         numbers=lambda d: [(label("deck_step", d.lang), str(least_sure_step(d.example)))] if d.example.steps else []),
    Step("floor", (Part("plot", "floor"), Part("md", "floor-verdict", hint=True)), _floor, follows="", height=200),
    Step("profile", (Part("plot", "profile"), Part("md", "profile-note", hint=True)), _profile, follows=""),
)
LAB_STEP = next(i for i, s in enumerate(STEPS) if s.chapter == "lab")


def drawn(i: int, traces: dict[str, Trace], lang: str, present: bool, models=None) -> list:
    """Step i's parts drawn from `traces`; a trace still being generated is drawn as far as it has got.
    On a projector every step fits 1280x720 beside the narration."""
    step = STEPS[i]
    size = (BOX_WIDTH, step.height if present else 260)
    return step.draw(Draw(traces, lang, present, size, models))
