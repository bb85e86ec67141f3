"""/export: one chart of a trace file as an SVG or PNG sized for a 16:9 slide (ui/share/charts_out.py
draws it with the same functions the chapters use)."""

from __future__ import annotations

from pathlib import Path

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.errors import InvalidRequest
from engine.run.protocol import ExportArgs
from viz.text.strings import LANGS

from ui.api.args import arguments, file_path, lang_of_caller
from ui.chapters.common import clamp
from ui.chapters.decode import least_sure_step
from ui.host.errors import refused
from ui.host.uploads import read_upload
from ui.share.charts_out import CHARTS, write


class ExportEndpoint:
    def __init__(self, models):
        self.models = models

    def export(self, trace: FileData, chart: str = "candidates", format: str = "svg", lang: str = "en",
               step: int = -1, layer: int = -1, head: int = -1, request: gr.Request = None) -> FileData:
        """One chart of a trace file as an SVG or PNG file sized for a 16:9 slide, its title and axes in
        `lang` (en or zh). `step` -1: the step where the model was least sure; `layer` -1: the last;
        `head` -1: the mean of all heads. Charts: token_chips, heatmap, head_view, kv_growth,
        kv_projection, candidates, attention_row, speed_cards, timeline, step_times, playground."""
        said = lang_of_caller(request)
        a = arguments(ExportArgs, said, self.models.limits, chart=chart, format=format, lang=lang, step=step,
                      layer=layer, head=head)
        chart, fmt, lang = a.chart, a.format, a.lang
        # which names the charts, formats and languages are: sentences that list them (a Literal's error would not)
        if chart not in CHARTS:
            names, asked = ", ".join(CHARTS), repr(chart[:40])
            raise refused(InvalidRequest(f"There is no chart named {asked}; the charts are: {names}.", "export_chart",
                                         chart=asked, names=names), said)
        if fmt not in ("svg", "png"):
            raise refused(InvalidRequest(f"Charts are exported as svg or png, not {fmt[:20]!r}.", "export_format",
                                         got=repr(fmt[:20])), said)
        if lang not in LANGS:
            raise refused(InvalidRequest(f"The language is {' or '.join(LANGS)}, not {lang[:20]!r}.", "export_lang",
                                         got=repr(lang[:20])), said)
        step, layer, head = a.step, a.layer, a.head
        source = read_upload(file_path(trace), self.models.limits, said)
        last = max(len(source.steps) - 1, 0)
        step = least_sure_step(source) if step < 0 else clamp(step, last)
        layer = source.model.layers - 1 if layer < 0 else clamp(layer, source.model.layers - 1)
        head = None if head < 0 else clamp(head, source.model.heads - 1)
        draw, fit = CHARTS[chart]
        try:
            drawn = draw(source, step, layer, head, lang)
        except (ValueError, EngineError) as exc:     # e.g. attention not captured in this trace
            raise gr.Error(str(exc)) from None
        path = write(chart, drawn, formats=(fmt,), fit=fit)[0]
        return FileData(path=path, orig_name=Path(path).name,
                        mime_type="image/svg+xml" if fmt == "svg" else "image/png")

    def declare(self) -> None:
        gr.api(self.export, api_name="export", concurrency_limit=2, concurrency_id="charts-out")
