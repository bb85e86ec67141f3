"""Issue 39 item 3: "Download this chapter's charts" ships charts, not the notices that stand in
for a chart that cannot be drawn (they came out as 1280x720 slides of one sentence)."""

from pathlib import Path

import gradio as gr
import pytest

from engine.schema.trace import Trace
from tests.paths import ROOT
from ui.share.charts_out import chapter_files
from viz.charts import decode
from viz.charts.notice import is_notice, notice_chart
from viz.out import export
from viz.text.labels import label


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_chapters_download_leaves_its_notices_out(lang):
    trace = Trace.from_json((ROOT / "assets" / "traces" / f"{lang}-next.json").read_text(encoding="utf-8"))
    plot = gr.Plot()
    chart = plot.postprocess(decode.candidates_chart(trace, 2, lang=lang))       # as the page holds them
    notice = plot.postprocess(notice_chart(label("err_no_lens", lang)))
    assert is_notice(export.spec_of(notice)) and not is_notice(export.spec_of(chart))
    paths = chapter_files("decode", [("candidates", chart), ("lens", notice), ("attention-row", notice)], None, lang)
    assert sorted(Path(p).name for p in paths) == ["decode-candidates.png", "decode-candidates.svg"]
