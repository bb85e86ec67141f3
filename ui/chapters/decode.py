"""4 · Decode: one step at a time. The step's facts, its top candidates and the chosen token, the new
token's attention over the whole cache, the logit lens (computed on view from the states the run
kept), and, inside the chapter, the fork panel (ui/chapters/fork.py)."""

from __future__ import annotations

import gradio as gr

from engine.schema.trace import Trace
from viz import html
from viz.charts import attention, decode
from viz.charts.notice import notice_chart
from viz.opening import first_readable_step, least_sure_step, readable_step  # noqa: F401 (re-exported)
from viz.text.labels import label

from ui.chapters.common import PRIVATE, chart_or_notice, clamp, head_choices, head_index, intro, known_head, plot
from ui.chapters.fork import token_choices
from ui.host.models import torch_side
from ui.page.i18n import t

# Enter in a chapter's number box (the step, a layer, a query, a seed) applies the typed value: Gradio's
# slider applies it on blur (its "release"), and Enter does nothing there; one listener for the page.
ENTER_APPLIES_JS = """
if (!window.tbtEnterApplies) {
  window.tbtEnterApplies = true;
  document.addEventListener('keydown', (e) => {
    const box = e.target;
    if (e.key !== 'Enter' || !box.matches || !box.matches('#explore-chapters input[type=number]')) return;
    e.preventDefault();
    box.blur();                      // the slider's own release: the chapter draws the typed step
    requestAnimationFrame(() => box.focus());
  }, true);
}
"""


def with_lens(models, trace: Trace | None, step) -> Trace | None:
    """`trace` with the lens of the step on show computed from its kept states (~25 ms here); as it
    is where this page has no model for it (a served run, another model's file)."""
    engine = models.of_trace(trace) if trace is not None and trace.steps else None
    if engine is None or trace.model.source == "served":
        return trace
    return torch_side("engine.model.lens").with_step_lens(engine, trace, clamp(step, len(trace.steps) - 1))


def decode_view(trace: Trace, step, layer, head, lang: str) -> tuple:
    """(step facts, candidates, attention row, logit lens) of one step."""
    if not trace.steps:
        empty = notice_chart(label("no_steps", lang))
        return "", empty, empty, empty
    step = clamp(step, len(trace.steps) - 1)
    layer = clamp(layer, trace.model.layers - 1)
    return (html.step_html(trace, step, lang=lang), chart_or_notice(decode.candidates_chart, trace, step, lang=lang),
            chart_or_notice(attention.attention_row, trace, step, layer, head_index(head), lang=lang),
            chart_or_notice(decode.lens_chart, trace, step, lang=lang))


class Decode:
    def __init__(self, models, layers: int, heads: int, fork_panel):
        """`fork_panel`: called where the fork panel goes (between the candidates and the attention)."""
        self.models = models
        intro(3)
        self.step = gr.Slider(0, 1, value=0, step=1, label=t("decode_step"), elem_id="step")
        self.facts = gr.HTML(elem_id="step-facts", js_on_load=ENTER_APPLIES_JS)
        self.candidates = plot("candidates")
        self.fork = fork_panel()
        with gr.Row():
            self.layer = gr.Slider(0, layers - 1, value=layers - 1, step=1, label=t("layer"), elem_id="decode-layer")
            self.head = gr.Dropdown(head_choices(heads), value="average", label=t("head"), elem_id="decode-head")
        self.attention_row, self.lens = plot("attention-row"), plot("lens")

    @property
    def shown(self) -> list:
        """What `view` fills: `decode_view`'s views, then the fork's token list (always the
        candidates of the step on show: issue 48)."""
        return [self.facts, self.candidates, self.attention_row, self.lens, self.fork.token]

    @property
    def views(self) -> list:
        return [*self.shown, self.step, self.layer, self.head]

    def view(self, trace: Trace, step, layer, head, lang: str) -> tuple:
        """decode_view of the step on show, its logit lens computed now, and that step's candidates
        for the fork."""
        return (*decode_view(with_lens(self.models, trace, step), step, layer, head, lang),
                token_choices(trace, step, lang))

    def draw(self, trace: Trace, layer, head, lang: str, at: int | None = None) -> list:
        """A trace opens on the word the model was least sure of (viz/opening.py; Sampling opens on
        it too), or on step `at` (a branch opens where it was forked); the layer and head controls
        follow its model."""
        last = max(len(trace.steps) - 1, 0)
        opening = least_sure_step(trace) if at is None else clamp(at, last)
        heads = head_choices(trace.model.heads, lang)
        layer, head = clamp(layer, trace.model.layers - 1), known_head(head, heads)
        return [*self.view(trace, opening, layer, head, lang), gr.update(maximum=max(last, 1), value=opening),
                gr.update(maximum=max(trace.model.layers - 1, 1), value=layer), gr.update(choices=heads, value=head)]

    def wire(self, trace: gr.State, lang: gr.State) -> None:
        inputs = [trace, self.step, self.layer, self.head, lang]
        gr.on([self.step.release], lambda tr, *a: self.view(tr, *a) if tr else gr.skip(), inputs,
              self.shown, trigger_mode="always_last", **PRIVATE)
        # another layer or head: the same step, so the fork's list (and the token picked there) stays
        gr.on([self.layer.release, self.head.input], lambda tr, *a: self.view(tr, *a)[:-1] if tr else gr.skip(),
              inputs, self.shown[:-1], trigger_mode="always_last", **PRIVATE)
