"""Small charts that stand in for a chart that cannot be drawn, and the embedding colour strip."""

from __future__ import annotations

import altair as alt
import pandas as pd

NOTICE = "tbt_notice"      # the usermeta key that marks a notice in its spec (exports skip it)


def notice_chart(text: str) -> alt.Chart:
    """A chart-sized message (e.g. "attention was not captured for this run")."""
    return (alt.Chart(pd.DataFrame({"text": [text]}))
            .mark_text(fontSize=16, color="#555", align="center")
            .encode(text="text:N")
            .properties(width=640, height=60, usermeta={NOTICE: True}))


def is_notice(spec: dict) -> bool:
    """Whether a chart's spec is a notice (a message standing in for a chart, not a chart to export)."""
    return bool((spec.get("usermeta") or {}).get(NOTICE))


def embedding_strip(vector: list[float], title: str) -> alt.Chart:
    """One cell per embedding dimension, coloured by value (blue negative, red positive)."""
    width = 32
    frame = pd.DataFrame({"dim": range(len(vector)), "value": vector})
    frame["row"], frame["col"] = frame["dim"] // width, frame["dim"] % width
    limit = float(frame["value"].abs().max()) or 1.0
    return (alt.Chart(frame, title=alt.Title(title, anchor="start"))
            .mark_rect()
            .encode(x=alt.X("col:O", axis=None), y=alt.Y("row:O", axis=None),
                    color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", reverse=True,
                                                               domain=[-limit, limit]),
                                    legend=alt.Legend(title=None)),
                    tooltip=["dim:Q", alt.Tooltip("value:Q", format=".4f")])
            .properties(width=width * 14, height=(len(vector) // width + 1) * 14))
