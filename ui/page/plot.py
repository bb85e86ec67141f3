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
BOX = "tbt_box"     # the Vega signal holding the box's width (0 while the box is hidden or unknown)
HOOK = "tbt_fit"    # the Vega-Lite parameter that gives the compiled Vega a signal list

# Vega reads a box's width at each window resize; Gradio's box changes width without one when its
# chapter or walkthrough step comes into sight, or the page is laid out again. One observer for the
# page raises a resize event (once a frame at most) whenever a chart's box changes width.
PLOT_JS = """
(() => {
  if (window.tbtPlotFit) return;
  window.tbtPlotFit = true;
  let pending = false;
  const widths = new WeakMap();
  const seen = new ResizeObserver((entries) => {
    let changed = false;
    for (const e of entries) {
      const w = Math.round(e.contentRect.width);
      if (widths.get(e.target) !== w) { widths.set(e.target, w); changed = true; }
    }
    if (changed && !pending) {
      pending = true;
      requestAnimationFrame(() => { pending = false; window.dispatchEvent(new Event('resize')); });
    }
  });
  const watch = (root) => {
    if (root.nodeType !== 1) return;
    const boxes = root.matches('[data-testid=altair]') ? [root] : root.querySelectorAll('[data-testid=altair]');
    boxes.forEach((el) => { if (!widths.has(el)) { widths.set(el, -1); seen.observe(el); } });
  };
  new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach(watch)))
    .observe(document.documentElement, {childList: true, subtree: true});
  watch(document.documentElement);
})();
"""


def fluid(spec: dict) -> dict:
    """`spec` (Vega-Lite) with the patch that fits it to a box narrower than it wants; the same
    spec when its width is not a plain number (a step per band, a composition), it asks to keep
    its width (viz.charts.theme.KEEP_WIDTH) or it is patched already.

    The box's width is a signal (`BOX`) read when the chart is drawn and again at every window
    resize (PLOT_JS raises one whenever a chart's box changes width, e.g. when its chapter comes
    into sight). A box of no width (a chart drawn while its chapter or step is hidden) is no box:
    the chart keeps its own width until it is seen, never drawn 12 px wide (issue 48)."""
    width = spec.get("width")
    meta = spec.get("usermeta") or {}
    if (not isinstance(width, (int, float)) or isinstance(width, bool) or any(k in spec for k in COMPOSED)
            or meta.get(KEEP_WIDTH) or "patch" in meta.get("embedOptions", {})):
        return spec
    autosize = spec.get("autosize")
    kind = autosize.get("type") if isinstance(autosize, dict) else autosize
    fitted = kind in ("fit", "fit-x")
    # a fitted chart's width is already its whole width; a padded one's is its plot's alone
    wants = width if fitted else width + ROOM
    narrow = f"({BOX} > 0 && {BOX} < {wants})"
    measure = f"isFinite(containerSize()[0]) ? containerSize()[0] - {CANVAS_PAD} : 0"
    signals = [{"name": BOX, "init": measure, "on": [{"events": "window:resize", "update": measure}]},
               # Vega merges these into its own width and autosize signals (they update with the box)
               {"name": "width", "update": f"{narrow} ? {BOX} : {width}"}]
    if not fitted:
        signals.append({"name": "autosize",
                        "update": f"{narrow} ? {{type: 'fit-x', contains: 'padding'}} : {{type: 'pad'}}"})
    patch = [{"op": "add", "path": "/signals/-", "value": s} for s in signals]
    if "title" in spec:      # a title or subtitle longer than the box is cut there, never widens the chart
        limit = ((spec.get("config") or {}).get("title") or {}).get("limit") or 100_000
        patch.append({"op": "add", "path": "/title/limit",
                      "value": {"signal": f"{BOX} > 0 ? min({limit}, {BOX} - 8) : {limit}"}})
    # a parameter of its own makes the compiled Vega carry a signal list the patch can add to
    params = [*spec.get("params", []), {"name": HOOK, "value": 0}]
    return {**spec, "params": params,
            "usermeta": {**meta, "embedOptions": {**meta.get("embedOptions", {}), "patch": patch}}}


class Plot(gr.Plot):
    """gr.Plot whose Altair charts fit a narrow box (`fluid`). (No __init__ of its own: Gradio reads a
    component's settings, elem_id included, from its class's __init__ signature.)

    An Altair chart is sent as its spec without Altair's check against the Vega-Lite schema
    (gr.Plot's `to_json()` runs it at every draw: ~0.1 s of the server's CPU in each page's first
    draw of ~60 charts). The charts are the page's own, built by viz/; the tests check
    every one of them against the schema (tests/unit, tests/tiny/test_views.py) and in Chromium."""

    def postprocess(self, value) -> PlotData | None:
        if is_altair(value):
            return sent(value)
        return super().postprocess(value)     # PlotData (sent already: ui/page/same_draw.py) as it is


def is_altair(value) -> bool:
    return value is not None and not isinstance(value, PlotData) and "altair" in type(value).__module__


def sent(chart) -> PlotData:
    """An Altair chart as the chart box sends it: its spec, fitted to a narrow box (`fluid`)."""
    return PlotData(type="altair", plot=json.dumps(fluid(chart.to_dict(validate=False))))
