"""3 · KV cache: the cache's bytes after prefill and after every step, measured from its tensors
beside the formula, and the same formula projected onto larger models and contexts."""

from __future__ import annotations

import gradio as gr

from engine.schema.specs import kv_projection
from engine.schema.trace import Trace
from viz.charts import kv

from ui.chapters.common import chart_or_notice, intro, plot
from ui.page.i18n import t


class KvCache:
    def __init__(self):
        intro(2)
        self.growth, self.projection = plot("kv-growth"), plot("kv-projection")
        self.table = gr.Dataframe(label=t("projection_table"), interactive=False)

    @property
    def views(self) -> list:
        return [self.growth, self.projection, self.table]

    @staticmethod
    def draw(trace: Trace, lang: str) -> list:
        rows = kv_projection(trace.model)
        return [chart_or_notice(kv.kv_growth_chart, trace, lang=lang), chart_or_notice(kv.projection_chart, rows, lang=lang),
                kv.projection_table(rows, lang=lang)]
