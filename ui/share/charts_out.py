"""Charts out of the page and the API: SVG and PNG files sized for a 16:9 slide (viz/out/export.py).

On the page, "Download this chapter's charts" takes the charts the visitor sees in the chapter on
show (each gr.Plot's own Vega-Lite spec, already in the page's language and at the chosen step,
layer and head) and the chapter's HTML cards redrawn as charts (viz/out/slides.py). The API's /export
(ui/api/export.py) draws one chart by name from a trace file (CHARTS), the same functions the chapters use.
"""

from __future__ import annotations

import re

import gradio as gr

from engine.run.request import PLAYGROUND
from engine.schema.specs import kv_projection
from viz.charts import attention, decode, kv, speed
from viz.out import export
from viz.charts.notice import is_notice
from viz.charts.sampling import playground_chart
from viz.out.slides import speed_cards_chart, token_chips_chart

from ui.chapters.prefill import mapped
from ui.host.models import torch_side
from ui.host.runs import TempFolder

KEEP = 256                  # files kept for download; the oldest go first
FOLDER = TempFolder("charts", KEEP)          # made by the first export, removed at exit
# the HTML cards of a chapter, as pictures (drawn in pixels: not fitted to the slide)
CARDS = {"tokens": ("chips", token_chips_chart), "speed": ("cards", speed_cards_chart)}   # files tokens-chips, speed-cards


def write(name: str, chart, formats=("svg", "png"), fit: bool = True) -> list[str]:
    """`chart` (an Altair chart or a gr.Plot's value) as files named after `name`, one per format."""
    spec = export.slide(chart, fit=fit)
    folder = FOLDER.fresh()
    paths = []
    for fmt in formats:
        path = folder / f"{name}.{fmt}"
        if fmt == "svg":
            path.write_text(export.svg(spec), encoding="utf-8")
        else:
            path.write_bytes(export.png(spec))
        paths.append(str(path))
    return paths


def chapter_files(chapter: str, plots: list[tuple[str, object]], trace, lang: str, branch=None) -> list[str]:
    """The chapter's charts as SVG and PNG: each drawn plot (elem_id, value) and the chapter's cards
    (`branch`: the branch on show, whose own figures the speed cards are, as on the page)."""
    paths = []
    for elem_id, value in plots:
        if value is None or is_notice(export.spec_of(value)):
            continue             # not drawn (a sweep not run), or a notice saying why it cannot be: not a chart
        paths += write(f"{chapter}-{elem_id}", value)
    if trace is not None and chapter in CARDS:
        name, draw = CARDS[chapter]
        drawn = draw(trace, lang, branch) if chapter == "speed" else draw(trace, lang)
        paths += write(f"{chapter}-{name}", drawn, fit=False)
    return paths


def plots_in(block) -> list[gr.Plot]:
    """Every gr.Plot inside a layout block, in page order."""
    found = []
    for child in getattr(block, "children", []) or []:
        if isinstance(child, gr.Plot):
            found.append(child)
        found += plots_in(child)
    return found


# --- the API's /export: one chart by name ----------------------------------------------------
def _playground(trace, step, lang):
    """The playground at its opening knobs (PLAYGROUND), as the page first shows it."""
    p = PLAYGROUND
    rows = torch_side("engine.run.sampling").playground(trace.steps[step].candidates, p.temperature, p.top_k, p.top_p)
    return playground_chart(rows[:10], lang=lang)


# name -> (draw(trace, step, layer, head, lang), drawn in pixels)
CHARTS = {
    "token_chips": (lambda tr, s, l, h, lang: token_chips_chart(tr, lang), False),
    "heatmap": (lambda tr, s, l, h, lang: attention.heatmap(tr, l, h, lang=lang), True),
    "head_view": (lambda tr, s, l, h, lang: attention.head_view(tr, l, h, mapped(tr) - 1, lang=lang), True),
    "kv_growth": (lambda tr, s, l, h, lang: kv.kv_growth_chart(tr, lang=lang), True),
    "kv_projection": (lambda tr, s, l, h, lang: kv.projection_chart(kv_projection(tr.model), lang=lang), True),
    "candidates": (lambda tr, s, l, h, lang: decode.candidates_chart(tr, s, lang=lang), True),
    "attention_row": (lambda tr, s, l, h, lang: attention.attention_row(tr, s, l, h, lang=lang), True),
    "speed_cards": (lambda tr, s, l, h, lang: speed_cards_chart(tr, lang), False),
    "timeline": (lambda tr, s, l, h, lang: speed.timeline_chart(tr, lang=lang), True),
    "step_times": (lambda tr, s, l, h, lang: speed.step_times_chart(tr, lang=lang), True),
    "playground": (lambda tr, s, l, h, lang: _playground(tr, s, lang), True),
}
NAME = re.compile(r"[a-z_]{1,40}")
