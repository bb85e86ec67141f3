"""What every chapter uses: its opening lines, a chart box, the event options, the layer and head
choices, and a chart that says why it cannot be drawn instead of failing."""

from __future__ import annotations

import functools

import gradio as gr

from viz.charts.notice import notice_chart
from viz.text.labels import label

from ui.host.runs import ENGINE_CONCURRENCY
from ui.page.i18n import t
from ui.page.plot import Plot

PRIVATE = {"api_visibility": "private"}            # page events: not part of the documented API
ENGINE = {"concurrency_limit": ENGINE_CONCURRENCY, "concurrency_id": "engine"}   # events that run the model
# chips and steps report which one was clicked (their data-index / data-step) as the event's index
CLICK_JS = """
element.addEventListener('click', (e) => {
  const chip = e.target.closest('[data-index],[data-step]');
  if (!chip) return;
  trigger('click', {index: Number(chip.dataset.index ?? chip.dataset.step)});
});
"""
AVERAGE = "average"


def intro(step: int) -> gr.Markdown:
    """A chapter's one-line introduction: the same line that opens its walkthrough step, and under it
    the chapter's legend: which of its numbers are measured, which a formula, which a projection."""
    line = gr.Markdown(t(f"wt_{step}_intro"), elem_classes="tbt-intro")
    gr.Markdown(t(f"wt_{step}_legend"), elem_classes="tbt-hint tbt-chapter-legend")
    return line


def plot(elem_id: str, **kwargs) -> gr.Plot:
    return Plot(show_label=False, elem_id=elem_id, **kwargs)   # charts carry their own titles


def clamp(value, top: int) -> int:
    """`value` as a whole number in [0, top] (0 for anything that is not a number)."""
    try:
        return max(0, min(int(value or 0), top))
    except (TypeError, ValueError):
        return 0


def head_choices(heads: int, lang: str = "en") -> list[tuple[str, str]]:
    """The head dropdown's (shown label, value) pairs: the mean of all heads, then each head."""
    return [(label("all_heads_mean", lang), AVERAGE)] + [(str(h), str(h)) for h in range(heads)]


def head_index(choice: str | None) -> int | None:
    return None if choice in (None, "", AVERAGE) else int(choice)


def known_head(choice, heads: list[tuple[str, str]]) -> str:
    """The visitor's head if the trace on show has it, else the mean of all heads."""
    return choice if choice in [v for _, v in heads] else AVERAGE


def chart_or_notice(draw, *args, lang: str, **kwargs):
    """A chart, or a notice saying why it cannot be drawn (e.g. attention was not captured)."""
    try:
        return draw(*args, lang=lang, **kwargs)
    except ValueError as exc:
        return notice_chart(str(exc))


# --- Stop buttons: greyed out while nothing runs that they could stop -----------------------------
def stop_button(text: str, elem_id: str, **kwargs) -> gr.Button:
    """A Stop button, not clickable until a run it stops is streaming (`while_running`)."""
    return gr.Button(text, variant="stop", elem_id=elem_id, interactive=False, **kwargs)


def while_running(fn):
    """`fn` (a generator of output tuples) with one more output: its Stop button, clickable while
    `fn` streams. Gradio reads `fn`'s own signature (its gr.Request) through functools.wraps."""
    @functools.wraps(fn)
    def running(*args):
        for update in fn(*args):
            yield (*update, gr.update(interactive=True))
    return running


def stop_wiring(stop: gr.Button, on_stop, events: list) -> None:
    """Stop's click (`on_stop(request)`) greys it out again, and so does the end of each event it
    stops, however that event ended (finished, stopped, refused)."""
    def stopped(request: gr.Request):
        on_stop(request)
        return gr.update(interactive=False)
    # every press is sent: with Gradio's default ("once") a second press waits for the first's answer,
    # and a first whose request hung (seen in Chromium on a loaded box) would swallow every later one
    stop.click(stopped, None, stop, queue=False, trigger_mode="multiple", **PRIVATE)
    for event in events:
        event.then(lambda: gr.update(interactive=False), None, stop, queue=False, **PRIVATE)
