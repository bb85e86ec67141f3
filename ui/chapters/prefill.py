"""2 · Prefill: one forward pass over every prompt token, its time, and the attention it computed
(a layer's heatmap and a head view), the layer and head chosen by the visitor."""

from __future__ import annotations

import gradio as gr

from engine.schema.trace import Trace
from viz.charts import attention
from viz.opening import telling_head
from viz.text.labels import label

from ui.chapters.common import PRIVATE, chart_or_notice, clamp, head_choices, head_index, intro, known_head, plot
from ui.page.i18n import t


def mapped(trace: Trace) -> int:
    """How many prompt positions the attention maps cover."""
    return trace.attention.prefill_tokens if trace.attention else len(trace.prompt.tokens)


def prefill_view(trace: Trace, layer, head, query, lang: str) -> tuple:
    """(facts line, heatmap, head view) for the chosen layer, head and query token."""
    p = trace.prefill
    facts = (f"**{p.tokens}** {label('prompt_tokens', lang)} · **{p.ms:.0f} ms** "
             f"{label('one_forward_pass', lang)} · **{p.tokens_per_s:,.0f}** {label('tokens_per_s', lang)}"
             if p else "")
    layer = clamp(layer, trace.model.layers - 1)
    return (facts, chart_or_notice(attention.heatmap, trace, layer, head_index(head), lang=lang),
            chart_or_notice(attention.head_view, trace, layer, head_index(head), clamp(query, mapped(trace) - 1),
                            lang=lang))


class Prefill:
    def __init__(self, layers: int, heads: int):
        """`layers`, `heads`: the recording's model, the chapter's first view (the controls follow
        each trace drawn)."""
        intro(1)
        self.facts = gr.Markdown(elem_id="prefill-facts")
        with gr.Row():
            self.layer = gr.Slider(0, layers - 1, value=0, step=1, label=t("layer"), elem_id="prefill-layer")
            self.head = gr.Dropdown(head_choices(heads), value="average", label=t("head"))
            self.query = gr.Slider(0, 255, value=0, step=1, label=t("query_token"))
        self.heatmap, self.head_view = plot("heatmap"), plot("head-view")

    @property
    def controls(self) -> list:
        return [self.layer, self.head, self.query]

    @property
    def views(self) -> list:
        return [self.facts, self.heatmap, self.head_view, self.layer, self.head, self.query]

    def draw(self, trace: Trace, layer, head, query, lang: str, fresh: bool) -> list:
        """A new trace (`fresh`) opens on the head with the clearest pattern in its measured
        attention and on the prompt word it shows best (viz/opening.py), saying why; without
        attention, on the last prompt token. A relabel keeps the visitor's choice. The controls
        follow the model of the trace on show (a file from another model has more or fewer layers)."""
        last = mapped(trace) - 1
        q = last if fresh else min(clamp(query, last), last)
        heads = head_choices(trace.model.heads, lang)
        layer, head = clamp(layer, trace.model.layers - 1), known_head(head, heads)
        opening = telling_head(trace) if fresh else None
        if opening is not None:
            layer, head, q = opening.layer, str(opening.head), opening.query
        facts, *charts = prefill_view(trace, layer, head, q, lang)
        if opening is not None:
            facts += "  \n" + label("prefill_opened_on", lang, layer=layer, head=head, heads=opening.heads,
                                    focus=f"{opening.focus:.0%}")
        return [facts, *charts, gr.update(maximum=max(trace.model.layers - 1, 1), value=layer),
                gr.update(choices=heads, value=head), gr.update(maximum=max(last, 1), value=q)]

    def wire(self, trace: gr.State, lang: gr.State) -> None:
        # a slider redraws its heavy views when it is let go (`release`: the end of a drag, or the
        # number box left), so a drag across the prompt costs one redraw, not one per tick
        gr.on([self.layer.release, self.head.input, self.query.release],
              lambda tr, *a: prefill_view(tr, *a) if tr else gr.skip(), [trace, *self.controls, lang],
              [self.facts, self.heatmap, self.head_view], trigger_mode="always_last", **PRIVATE)
