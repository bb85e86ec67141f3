"""Attention charts: the prefill heatmap, a BertViz-style head view, and one decode step's row.

Token labels travel once, as a chart parameter (`tok`), and axes look them up by position, so a
256-token heatmap ships ~30k small (q, k, w) cells instead of 30k copies of two strings.
"""

from __future__ import annotations

import altair as alt

from engine.schema.trace import Trace

from viz import frames
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, KEEP_WIDTH, MONO, ORANGE, STACK_NARROW


def _which(trace: Trace, layer: int, head: int | None, lang: str) -> str:
    heads = label("all_heads_mean", lang) if head is None else label("head_n", lang, n=head)
    return label("layer_head", lang, layer=layer, heads=heads)


def _token_param(labels: list[str]) -> alt.Parameter:
    return alt.param(name="tok", value=labels)


def _token_axis(title: str, count: int, angle: int = 0) -> alt.Axis:
    dense = count > 40  # then tick marks are left off
    # labels that would overlap are thinned out (a long prompt, or a short chart on a projector:
    # 25 rows in 250 px); where each has room they all show
    return alt.Axis(title=title, labelExpr="tok[datum.value]", labelOverlap="greedy",
                    ticks=not dense, labelAngle=angle, labelFont=MONO, labelPadding=4)


def heatmap(trace: Trace, layer: int, head: int | None, lang: str = "en") -> alt.Chart:
    """Prefill attention: query token (row) x key token (column), lower triangle only."""
    cells = frames.heatmap_frame(trace, layer, head, lang)
    n = trace.attention.prefill_tokens
    labels = frames.prompt_labels(trace, n)
    side = min(720, max(320, 15 * n))
    subtitle = [label("heatmap_sub", lang), label("heatmap_sub2", lang, min_weight=f"{frames.MIN_WEIGHT:g}")]
    if trace.attention.prefill_capped:
        subtitle.append(label("prefill_capped", lang, n=n, total=len(trace.prompt.tokens)))
    domain = list(range(n))
    return alt.Chart(cells, title=alt.Title(
        label("heatmap_title", lang, which=_which(trace, layer, head, lang)), subtitle=subtitle,
    )).mark_rect().encode(
        x=alt.X("k:O", scale=alt.Scale(domain=domain),
                axis=_token_axis(label("key_axis", lang), n, angle=-90)),
        y=alt.Y("q:O", scale=alt.Scale(domain=domain), axis=_token_axis(label("query_axis", lang), n)),
        color=alt.Color("w:Q", title=label("weight", lang),
                        scale=alt.Scale(scheme="blues", type="sqrt", domain=[0, 1])),
        tooltip=[alt.Tooltip("query:N", title=label("query_token", lang)),
                 alt.Tooltip("key:N", title=label("key_token", lang)),
                 alt.Tooltip("w:Q", title=label("weight", lang), format=".4f")],
    ).transform_calculate(
        query="tok[datum.q]", key="tok[datum.k]",
    ).add_params(_token_param(labels)).properties(width=side, height=side, usermeta={KEEP_WIDTH: True})


def head_view(trace: Trace, layer: int, head: int | None, query: int, lang: str = "en") -> alt.LayerChart:
    """Prompt tokens twice, queries left and keys right, with a line from `query` to every key
    it attends to; line width and opacity follow the weight (BertViz's head view)."""
    tokens, links, pitch = frames.head_view_frames(trace, layer, head, query, lang)
    n = len(tokens)
    y_scale = alt.Scale(domain=[-0.5, n - 0.5], reverse=True, nice=False)
    y = alt.Y("pos:Q", axis=None, scale=y_scale)
    x_scale = alt.Scale(domain=[0, 1])
    base = alt.Chart(tokens)
    left = base.transform_filter("datum.show_left && !datum.chosen").mark_text(
        align="right", dx=-8, font=MONO, fontSize=13, color=INK).encode(
        x=alt.datum(0, scale=x_scale, axis=None), y=y, text="label:N")
    chosen = base.transform_filter("datum.chosen").mark_text(
        align="right", dx=-8, font=MONO, fontSize=14, fontWeight="bold", color=ORANGE).encode(
        x=alt.datum(0, scale=x_scale, axis=None), y=y, text="label:N")
    right = base.transform_filter("datum.show_right").mark_text(
        align="left", dx=8, font=MONO, fontSize=13, color=INK).encode(
        x=alt.datum(1, scale=x_scale, axis=None), y=y, text="label:N",
        opacity=alt.Opacity("alpha:Q", scale=None)).transform_calculate(
        alpha="0.45 + 0.55 * min(1, datum.w / 0.2)")  # readable even where the weight is ~0
    dots = [base.mark_point(size=16, filled=True, color=GREY).encode(
        x=alt.datum(side, scale=x_scale, axis=None), y=y) for side in (0, 1)]
    lines = alt.Chart(links).mark_rule(color=BLUE, strokeCap="round").encode(
        x=alt.datum(0, scale=x_scale, axis=None), x2=alt.datum(1), y=alt.Y("query:Q", scale=y_scale, axis=None),
        y2="pos:Q",
        strokeWidth=alt.StrokeWidth("w:Q", scale=alt.Scale(domain=[0, 1], range=[0.6, 9]),
                                    legend=None),
        opacity=alt.Opacity("w:Q", scale=alt.Scale(domain=[0, 0.5], range=[0.15, 0.95],
                                                   clamp=True), legend=None),
        tooltip=[alt.Tooltip("label:N", title=label("key_token", lang)),
                 alt.Tooltip("w:Q", title=label("weight", lang), format=".4f")])
    query_label = tokens.loc[query, "label"]
    return alt.layer(lines, *dots, left, chosen, right, title=alt.Title(
        label("head_view_title", lang, which=_which(trace, layer, head, lang)),
        subtitle=[label("head_view_sub", lang, token=f"“{query_label}”"),
                  label("query_axis", lang) + "  →  " + label("key_axis", lang)],
    )).properties(width=260, height=pitch * n)


def attention_row(trace: Trace, step: int, layer: int, head: int | None, lang: str = "en") -> alt.Chart:
    """The attention of the query that produced step `step` over every cached position."""
    row = frames.attention_row_frame(trace, step, layer, head, lang)
    n = len(row)
    prompt, generated = label("source_prompt", lang), label("source_generated", lang)
    token = frames.token_label(step, trace.steps[step].token)
    return alt.Chart(row, title=alt.Title(
        label("row_title", lang, step=step, token=token.split(" ", 1)[1]),
        subtitle=[_which(trace, layer, head, lang) + " · " + label("row_sub", lang, n=n)],
    )).mark_bar().encode(
        x=alt.X("pos:O", scale=alt.Scale(domain=list(range(n))),
                axis=_token_axis(label("cached_axis", lang), n, angle=-90)),
        y=alt.Y("w:Q", title=label("weight", lang)),
        color=alt.Color("source:N", title=label("position_kind", lang),
                        scale=alt.Scale(domain=[prompt, generated], range=[BLUE, ORANGE]),
                        legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        tooltip=[alt.Tooltip("label:N", title=label("key_token", lang)),
                 alt.Tooltip("w:Q", title=label("weight", lang), format=".4f"),
                 alt.Tooltip("source:N", title=label("position_kind", lang))],
    ).add_params(_token_param(row["label"].tolist())).properties(
        width=min(1100, max(480, 14 * n)), height=260)
