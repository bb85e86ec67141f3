"""The sampling playground: one step's candidates through temperature, top-k and top-p.

Rows come from the app (engine.sampling applied to a stored step), one dict per candidate:
{"id", "text", "p_model", "p_temperature", "p_top_k", "p_top_p", "kept_top_k", "kept_top_p", "chosen"}.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from viz.fmt import short, visible
from viz.frames import rows_frame
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, MONO, STACK_NARROW

REQUIRED = ("id", "text", "p_model", "p_temperature", "p_top_k", "p_top_p", "kept_top_k",
            "kept_top_p", "chosen")
STAGES = ("stage_model", "stage_temperature", "stage_top_k", "stage_top_p")


def _status(row: pd.Series, stage: str) -> tuple[float, str]:
    """(bar length, status) of one candidate at one stage. A token removed by this stage keeps its
    probability from just before (drawn grey); one removed earlier has no bar."""
    if stage == "stage_model":
        return row.p_model, "status_kept"
    if stage == "stage_temperature":
        return row.p_temperature, "status_kept"
    if stage == "stage_top_k":
        return (row.p_top_k, "status_kept") if row.kept_top_k else (row.p_temperature, "status_removed")
    if not row.kept_top_k:
        return 0.0, "status_gone"
    return (row.p_top_p, "status_kept") if row.kept_top_p else (row.p_top_k, "status_removed")


def playground_frame(rows: list[dict], lang: str) -> pd.DataFrame:
    """One row per (candidate, stage)."""
    frame = rows_frame(rows, REQUIRED, lang)
    frame["label"] = [f"{i + 1}. {short(visible(str(t)), 16)}" for i, t in enumerate(frame["text"])]
    out = []
    for _, row in frame.iterrows():
        for stage in STAGES:
            p, status = _status(row, stage)
            out.append({"label": row.label, "text": str(row.text), "id": int(row.id),
                        "stage": label(stage, lang), "p": float(p), "status": label(status, lang),
                        "chosen": bool(row.chosen)})
    return pd.DataFrame(out)


def _ticks(frame: pd.DataFrame) -> list[float]:
    """Two to five round ticks: narrow facets cannot hold more labels."""
    top = float(frame["p"].max())
    step = 0.5 if top > 0.6 else 0.25 if top > 0.3 else 0.1 if top > 0.12 else 0.05
    return [round(i * step, 2) for i in range(int(top / step + 1e-9) + 1)]


def playground_chart(rows: list[dict], lang: str = "en", width: int = 150) -> alt.FacetChart:
    """Four small bar charts side by side: before sampling, after temperature, top-k, top-p, each
    `width` px wide (the walkthrough fits the four into its box)."""
    frame = playground_frame(rows, lang)
    kept, removed, gone = (label(k, lang) for k in ("status_kept", "status_removed", "status_gone"))
    order = list(dict.fromkeys(frame["label"]))
    chart = alt.Chart(frame).mark_bar().encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelFont=MONO)),
        x=alt.X("p:Q", title=label("probability", lang), axis=alt.Axis(format="%", values=_ticks(frame))),
        color=alt.Color("status:N", title=label("status", lang), legend=alt.Legend(orient="top", columns=STACK_NARROW),
                        scale=alt.Scale(domain=[kept, removed, gone], range=[BLUE, GREY, "#eeeeee"])),
        stroke=alt.condition("datum.chosen", alt.value(INK), alt.value(None)),
        strokeWidth=alt.condition("datum.chosen", alt.value(2), alt.value(0)),
        tooltip=[alt.Tooltip("text:N", title=label("token", lang)),
                 alt.Tooltip("id:Q", title=label("token_id", lang)),
                 alt.Tooltip("stage:N", title=label("step", lang)),
                 alt.Tooltip("p:Q", title=label("probability", lang), format=".2%"),
                 alt.Tooltip("status:N", title=label("status", lang))],
    ).properties(width=width, height=alt.Step(18))
    return chart.facet(
        column=alt.Column("stage:N", sort=[label(s, lang) for s in STAGES],
                          # a label may use its share of the gaps beside its panel (facet spacing: 20 px),
                          # so "after temperature" fits a presenter's 118 px panel ("after temperat…")
                          header=alt.Header(title=None, labelFontSize=14, labelFontWeight="bold",
                                            labelLimit=width + 18)),
        title=alt.Title(label("playground_title", lang), subtitle=[
            label("playground_sub", lang), label("playground_renorm", lang, n=len(order))]),
    )
