"""The page's chart box: a gr.Plot whose charts take a narrow column's width (issue 39's phone).

A chart is drawn at the width its spec names (e.g. the candidates' 520 px bars), which on a 390 px
phone is wider than the column. Gradio fits only its own native plots to the box, and Vega-Lite's
`width="container"` would stretch every chart across a desktop's 1,300 px column too. So each spec
carries a small patch to the Vega it compiles to (vega-embed applies `usermeta.embedOptions.patch`
as the page draws it): where the chart's box is narrower than the chart wants (`ROOM` for its axes
and legend), its whole width becomes the box's, axes, legend and title included (Vega's "fit-x");
in a wide box nothing changes, but a title longer than its box is cut there with an ellipsis
instead of widening the chart past it. Files made from the chart (vl-convert) never read the patch.

Compositions (side-by-side panels, facets) size their panels themselves: they keep their widths and
scroll inside their box, as wide tables do (assets/page.css).
"""

from __future__ import annotations

import json

import gradio as gr
from gradio.components.plot import PlotData

from viz.charts.theme import COMPOSED, KEEP_WIDTH

ROOM = 220          # px a chart's axes, legend and margins take beside its plot, at most (pad autosize)
CANVAS_PAD = 12     # Gradio's CSS pads each chart's canvas 6 px a side


def fluid(spec: dict) -> dict:
    """`spec` (Vega-Lite) with the patch that fits it to a box narrower than it wants; the same
    spec when its width is not a plain number (a step per band, a composition), it asks to keep
    its width (viz.charts.theme.KEEP_WIDTH) or it is patched already."""
    width = spec.get("width")
    meta = spec.get("usermeta") or {}
    if (not isinstance(width, (int, float)) or isinstance(width, bool) or any(k in spec for k in COMPOSED)
            or meta.get(KEEP_WIDTH) or "patch" in meta.get("embedOptions", {})):
        return spec
    box = f"containerSize()[0] - {CANVAS_PAD}"
    autosize = spec.get("autosize")
    kind = autosize.get("type") if isinstance(autosize, dict) else autosize
    fitted = kind in ("fit", "fit-x")
    # a fitted chart's width is already its whole width; a padded one's is its plot's alone
    wants = width if fitted else width + ROOM
    narrow = f"(isFinite(containerSize()[0]) && {box} < {wants})"
    patch = [{"op": "add", "path": "/width", "value": {"signal": f"{narrow} ? {box} : {width}"}}]
    if not fitted:
        patch.append({"op": "add", "path": "/autosize", "value": {
            "signal": f"{narrow} ? {{type: 'fit-x', contains: 'padding'}} : {{type: 'pad'}}"}})
    if "title" in spec:      # a title or subtitle longer than the box is cut there, never widens the chart
        limit = ((spec.get("config") or {}).get("title") or {}).get("limit") or 100_000
        patch.append({"op": "add", "path": "/title/limit",
                      "value": {"signal": f"isFinite(containerSize()[0]) ? min({limit}, {box} - 8) : {limit}"}})
    return {**spec, "usermeta": {**meta, "embedOptions": {**meta.get("embedOptions", {}), "patch": patch}}}


class Plot(gr.Plot):
    """gr.Plot whose Altair charts fit a narrow box (`fluid`). (No __init__ of its own: Gradio reads a
    component's settings, elem_id included, from its class's __init__ signature.)"""

    def postprocess(self, value) -> PlotData | None:
        data = super().postprocess(value)
        if data is not None and data.type == "altair":
            data = PlotData(type=data.type, plot=json.dumps(fluid(json.loads(data.plot))))
        return data
