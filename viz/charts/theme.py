"""The Altair theme: fonts large enough for a projector, CJK-capable font stack, quiet colours.

Importing `viz` registers and enables it once (altair's theme registry is process-wide); after that,
every chart's `to_dict()`/`to_json()` carries this config, including charts sent to `gr.Plot`.
"""

from __future__ import annotations

import altair as alt

NAME = "token-by-token"
FONT = ("Inter, 'Noto Sans', 'Noto Sans CJK SC', 'PingFang SC', 'Microsoft YaHei', "
        "'Helvetica Neue', Arial, sans-serif")
MONO = "'JetBrains Mono', 'Noto Sans Mono', 'Noto Sans Mono CJK SC', Menlo, Consolas, monospace"

# Colours with a meaning, used by several charts (colour-blind safe pairs: blue/orange).
BLUE = "#3a6fd8"      # the model's own distribution, prompt positions, measured values
ORANGE = "#e8842c"    # after sampling transforms, generated positions, formula values
PURPLE = "#8a5cc9"    # thinking phase
GREY = "#b9bec7"      # removed / not chosen
INK = "#1f2430"

LABEL_SIZE = 13
TITLE_SIZE = 14   # axis and legend titles
CHART_TITLE_SIZE = 18
NARROW_BOX = 480      # px: a box this narrow is a phone's column
# usermeta flag: the chart keeps its width in a narrow box and scrolls there (a square map whose cells
# would be squeezed to slivers), instead of being fitted to the box (ui/page/plot.py)
KEEP_WIDTH = "keep_width"
# the compositions whose size a top-level width/height cannot set (their panels size themselves)
COMPOSED = ("hconcat", "vconcat", "concat", "facet", "repeat")


def when_narrow(narrow, wide) -> alt.ExprRef:
    """A chart setting that takes `narrow` in a box narrower than NARROW_BOX and `wide` elsewhere
    (either a number or a Vega expression); with no box (a file made from the chart) it is `wide`."""
    # a box of no width (a chart drawn while its chapter is hidden) is no box: the wide setting
    return alt.ExprRef(f"containerSize()[0] > 0 && containerSize()[0] < {NARROW_BOX} ? {narrow} : {wide}")


# a legend above or below a chart (one row of entries) stacks them in one column in a box narrower
# than NARROW_BOX, instead of running off the chart's right edge; elsewhere (and in files made from
# the chart, drawn with no box) it keeps one row. (A legend at the side is one column already.)
STACK_NARROW = when_narrow(1, 0)


def config() -> alt.theme.ThemeConfig:
    axis = {"labelFontSize": LABEL_SIZE, "titleFontSize": TITLE_SIZE, "labelFont": FONT,
            "titleFont": FONT, "titleFontWeight": "normal", "labelColor": INK, "titleColor": INK,
            "gridColor": "#e6e8ec", "labelLimit": 180}
    return {
        "config": {
            "font": FONT,
            "axis": axis,
            "legend": {"labelFontSize": LABEL_SIZE, "titleFontSize": TITLE_SIZE, "labelFont": FONT,
                       "titleFont": FONT, "titleFontWeight": "normal", "labelLimit": 260},
            "header": {"labelFontSize": TITLE_SIZE, "titleFontSize": TITLE_SIZE, "labelFont": FONT,
                       "titleFont": FONT},
            "title": {"fontSize": CHART_TITLE_SIZE, "subtitleFontSize": LABEL_SIZE, "font": FONT,
                      "subtitleFont": FONT, "anchor": "start", "color": INK,
                      "subtitleColor": "#555b66", "offset": 10},
            "text": {"fontSize": LABEL_SIZE, "font": FONT},
            "view": {"stroke": None},
            "range": {"category": [BLUE, ORANGE, "#2e9e6b", PURPLE, "#d0455b", "#7a7f8c"]},
            "background": "white",
        }
    }


alt.theme.register(NAME, enable=True)(config)
# Attention heatmaps of long prompts hold up to ~33k cells, over altair's default 5,000-row guard.
alt.data_transformers.disable_max_rows()


def presentable(chart, size: tuple[int, int] | None = None, big: bool = False):
    """The same chart fitted to a box of `size` (width, height), and, for a projector (`big`), with
    larger type and heavier marks.

    The width is the whole chart's, its axes, legend and title included (Vega's "fit-x"): the plot
    takes what they leave, so a long token label or a legend title never pushes the chart past its
    box, where the page would cut it ("efill attention…"). The height is the plot's own. A faceted
    chart sizes its panels itself (e.g. viz.charts.sampling.playground_chart's `width`)."""
    if size is not None and isinstance(chart, (alt.Chart, alt.LayerChart)):
        chart = chart.properties(width=size[0], height=size[1],
                                 autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    # one configure_title call: a second one would replace the first. Long titles and subtitles
    # would widen the chart past its box, so they are cut with an ellipsis at the box's width.
    title = {"limit": size[0] - 8} if size is not None else {}
    if big:
        title.update(fontSize=24, subtitleFontSize=16, color="#000", subtitleColor="#222")
    if title:
        chart = chart.configure_title(**title)
    if big:
        chart = (chart.configure_axis(labelFontSize=17, titleFontSize=18, labelColor="#000", titleColor="#000")
                 .configure_legend(labelFontSize=17, titleFontSize=18)
                 .configure_header(labelFontSize=17, titleFontSize=18))
    return chart
