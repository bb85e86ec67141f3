"""Charts out of the page: SVG and PNG drawn on the server by vl-convert (no browser).

vl-convert-python runs Vega-Lite and Vega in an embedded JavaScript engine and draws with its own
renderer, offline: the chart a visitor sees (its Vega-Lite spec, titles and axes already in the
page's language) becomes an SVG (text stays text: searchable, editable, crisp at any size) or a
PNG. Fonts are the system's: Chinese needs a CJK face (Debian's fonts-noto-cjk), as the page does.

`slide` fits a chart to a 16:9 slide (1280 x 720 CSS pixels, PNG at 1.5x = 1920 x 1080) with the
projector's type sizes (viz.charts.theme.presentable's `big`).
"""

from __future__ import annotations

import copy
import json
import re

import vl_convert

from viz.charts.theme import COMPOSED

SLIDE = (1280, 720)
PNG_SCALE = 1.5              # 1280 x 720 -> 1920 x 1080 pixels
# the projector's type (viz.charts.theme.presentable, big=True), a little larger for a whole slide
BIG = {"axis": {"labelFontSize": 20, "titleFontSize": 22, "labelColor": "#000", "titleColor": "#000"},
       "legend": {"labelFontSize": 20, "titleFontSize": 22},
       "header": {"labelFontSize": 20, "titleFontSize": 22},
       "title": {"fontSize": 30, "subtitleFontSize": 20, "color": "#000", "subtitleColor": "#222"}}


def spec_of(chart) -> dict:
    """A Vega-Lite spec from an Altair chart, a gr.Plot's value (its `plot` JSON) or a dict."""
    if hasattr(chart, "to_dict"):
        return chart.to_dict()
    if isinstance(chart, str):
        return json.loads(chart)
    plot = getattr(chart, "plot", None) or (chart.get("plot") if isinstance(chart, dict) else None)
    if isinstance(plot, str):
        return json.loads(plot)
    if isinstance(chart, dict):
        return copy.deepcopy(chart)
    raise TypeError(f"not a chart: {type(chart).__name__}")


def slide(chart, size: tuple[int, int] = SLIDE, big: bool = True, fit: bool = True) -> dict:
    """The chart's spec fitted to `size` (a single view or a layer: exactly, its title and axes
    included; a composition keeps its panels' sizes) with the projector's type when `big`.
    `fit=False` keeps the chart's own size (a drawing in pixels: viz/out/slides.py)."""
    spec = spec_of(chart)
    if fit and not any(k in spec for k in COMPOSED):
        spec.update(width=size[0], height=size[1], autosize={"type": "fit", "contains": "padding"})
    config = spec.setdefault("config", {})
    for part, values in (BIG if big else {}).items():
        config[part] = {**config.get(part, {}), **values}
    title = config.setdefault("title", {})
    title["limit"] = size[0] - 16          # a long title is cut with an ellipsis, never widens the slide
    spec.setdefault("background", "white")
    return spec


def _version(spec: dict) -> str | None:
    """The Vega-Lite version the spec was written for (Altair says it in $schema), as vl-convert names it."""
    found = re.search(r"/v(\d+)\.(\d+)", spec.get("$schema", ""))
    if not found:
        return None
    wanted = f"{found.group(1)}.{found.group(2)}"
    versions = vl_convert.get_vegalite_versions()
    same_major = [v for v in versions if v.split(".")[0] == found.group(1)]
    return wanted if wanted in versions else (same_major[-1] if same_major else None)


def svg(spec: dict) -> str:
    """The chart as an SVG document (text as <text>, so its title can be read and searched)."""
    return vl_convert.vegalite_to_svg(spec, vl_version=_version(spec))


def png(spec: dict, scale: float = PNG_SCALE) -> bytes:
    return vl_convert.vegalite_to_png(spec, vl_version=_version(spec), scale=scale)


def inline_svg(spec: dict) -> str:
    """The SVG for inlining into an HTML page: without the XML declaration, scaling to its box."""
    text = svg(spec)
    text = re.sub(r"^<\?xml[^>]*>\s*", "", text)
    return re.sub(r"<svg ([^>]*?)width=\"([\d.]+)\" height=\"([\d.]+)\"",
                  lambda m: (f'<svg {m.group(1)}width="{m.group(2)}" height="{m.group(3)}" '
                             f'preserveAspectRatio="xMidYMid meet"'), text, count=1)
