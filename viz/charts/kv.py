"""KV cache charts: measured bytes against the formula, and the same formula at larger scale."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from engine.schema.trace import Trace

from viz import frames
from viz.fmt import bytes_unit, fmt_bytes
from viz.text.labels import label
from viz.charts.theme import BLUE, INK, ORANGE, STACK_NARROW, when_narrow

# Vega expression that writes a byte count with a binary unit, for log axes spanning MiB..TiB.
BYTES_LABEL = ("datum.value >= 1099511627776 ? format(datum.value / 1099511627776, '~g') + ' TiB' : "
               "datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + ' GiB' : "
               "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' MiB' : "
               "format(datum.value / 1024, '~g') + ' KiB'")



def two_lines(formula: str) -> list[str]:
    """The KV formula's product on two lines, cut before its middle "×": in one line it was cut off
    on a phone's column (issue 48: "… × 64 维 ···")."""
    cuts = [i for i, c in enumerate(formula) if c == "×"]
    if len(cuts) < 2:
        return [formula]
    at = cuts[len(cuts) // 2]
    return [formula[:at].rstrip(), formula[at:]]

def kv_growth_chart(trace: Trace, lang: str = "en") -> alt.LayerChart:
    """Bytes held by the KV cache after each step, measured, against 2·L·kv_heads·d·bytes·tokens."""
    steps = frames.steps_frame(trace)
    if steps.empty:
        raise ValueError(label("err_no_steps", lang))
    if trace.served and not trace.model.layers:
        raise ValueError(label("err_served_kv_unknown", lang))
    per_token = trace.model.kv_bytes(1)
    unit, divisor = bytes_unit(max(steps["kv_bytes"].max(), per_token * steps["kv_tokens"].max()))
    measured, formula = label("measured", lang), label("formula", lang)
    points = steps.assign(source=measured, value=steps["kv_bytes"] / divisor,
                          size=steps["kv_bytes"].map(fmt_bytes))
    m = trace.model
    last = int(steps["kv_tokens"].max())
    ends = sorted({0, last} | ({m.kv_window_held} if m.kv_window_held and m.kv_window_held < last else set()))
    line = pd.DataFrame({"kv_tokens": ends, "value": [m.kv_bytes(t) / divisor for t in ends],
                         "source": formula})
    title = alt.Title(label("kv_title_served" if trace.served else "kv_title", lang), subtitle=two_lines(label(
        "kv_sub", lang, layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim,
        bpv=m.bytes_per_value, per_token=fmt_bytes(per_token))) + sliding_note(m, lang) + (
        [label("kv_sub_served", lang, dtype=m.dtype)] if trace.served else []))
    x = alt.X("kv_tokens:Q", title=label("kv_tokens_axis", lang))
    y = alt.Y("value:Q", title=label("kv_bytes_axis", lang, unit=unit))
    color = alt.Color("source:N", title=label("source", lang), legend=alt.Legend(orient="top", columns=STACK_NARROW),
                      scale=alt.Scale(domain=[measured, formula], range=[BLUE, ORANGE]))
    formula_line = alt.Chart(line).mark_line(strokeDash=[6, 4], strokeWidth=2).encode(
        x=x, y=y, color=color)
    measured_points = alt.Chart(points).mark_point(filled=True, size=70).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("step:Q", title=label("step", lang)),
                 alt.Tooltip("token:N", title=label("token", lang)),
                 alt.Tooltip("kv_tokens:Q", title=label("kv_tokens", lang)),
                 alt.Tooltip("size:N", title=measured)])
    layers = [formula_line] if trace.served else [formula_line, measured_points]    # a server's cache is not read
    return alt.layer(*layers, title=title).properties(width=560, height=300)


def sliding_note(m, lang: str) -> list[str]:
    """Which layers hold a sliding window (the formula's line bends where they stop growing), which
    hold every position; nothing for a model without sliding layers."""
    if not m.sliding_layers:
        return []
    full = [i for i in range(m.layers) if i not in m.sliding_layers]
    if not full:
        return [label("kv_sub_sliding_all", lang, window=m.sliding_window, held=m.kv_window_held)]
    return [label("kv_sub_sliding", lang, sliding=", ".join(map(str, m.sliding_layers)), window=m.sliding_window,
                  held=m.kv_window_held, full=", ".join(map(str, full)))]


def _model_name(row: dict, lang: str) -> str:
    """A projection row's model as the page names it: "SmolLM2 (this model, float32)", "Llama-3-8B (bf16)"."""
    if row.get("own"):
        return label("this_model", lang, name=row["model"], dtype=row.get("dtype", ""))
    return f"{row['model']} ({row['dtype']})" if row.get("dtype") else row["model"]


def _projection_frame(rows: list[dict], lang: str) -> pd.DataFrame:
    rows = [{**r, "model": _model_name(r, lang)} for r in rows]
    frame = frames.rows_frame(rows, ("model", "context", "kv_bytes", "weights_bytes", "measured"), lang)
    frame["context_name"] = frame["context"].map(frames.context_name)
    frame["kind"] = frame["measured"].map(lambda m: label("measured" if m else "projected", lang))
    return frame


def _powers_of_two(low: float, high: float) -> list[int]:
    """Axis ticks for a log axis of bytes: 1, 4, 16 ... of a binary unit, so labels stay round."""
    low_exp, high_exp = int(np.floor(np.log2(max(low, 1)))), int(np.ceil(np.log2(max(high, 1))))
    step = 1 if high_exp - low_exp <= 8 else 2
    return [2 ** e for e in range(low_exp - low_exp % step, high_exp + 1, step)]


def projection_chart(rows: list[dict], lang: str = "en") -> alt.LayerChart:
    """KV bytes per model at each context length (log scale), with each model's weights as a tick."""
    frame = _projection_frame(rows, lang)
    contexts = frame.sort_values("context")["context_name"].unique().tolist()
    models = list(dict.fromkeys(frame["model"]))
    frame = frame.assign(kv=frame["kv_bytes"].map(fmt_bytes), weights=frame["weights_bytes"].map(fmt_bytes))
    x = alt.X("context_name:N", sort=contexts, title=label("context_axis", lang),
              axis=alt.Axis(labelAngle=0))
    offset = alt.XOffset("model:N", sort=models)
    y_axis = alt.Axis(labelExpr=BYTES_LABEL, title=label("kv_bytes", lang), values=_powers_of_two(
        min(frame["kv_bytes"].min(), frame["weights_bytes"].min()),
        max(frame["kv_bytes"].max(), frame["weights_bytes"].max())))
    tooltip = [alt.Tooltip("model:N", title=label("model", lang)),
               alt.Tooltip("context:Q", title=label("context_axis", lang), format=","),
               alt.Tooltip("kv:N", title=label("col_kv", lang)),
               alt.Tooltip("weights:N", title=label("col_weights", lang)),
               alt.Tooltip("kind:N", title=label("source", lang))]
    # the measured/projected legend only when both are on the chart
    kinds = [k for k in (label("measured", lang), label("projected", lang)) if k in set(frame["kind"])]
    bars = alt.Chart(frame).mark_bar().encode(
        x=x, xOffset=offset,
        y=alt.Y("kv_bytes:Q", scale=alt.Scale(type="log"), axis=y_axis, stack=None),
        color=alt.Color("model:N", sort=models, title=label("model", lang),
                        legend=alt.Legend(orient="top", columns=when_narrow(1, 2),
                                          labelLimit=when_narrow("containerSize()[0] - 150", 420))),
        # ordinal and sorted: Vega-Lite 5 refuses opacity on an unsorted discrete field; one kind alone gets a
        # plain value (a one-value range came out of the page's Vega-Lite as [0.8, NaN]: bars with no opacity)
        opacity=alt.Opacity("kind:O", sort=kinds, title=label("source", lang),
                            scale=alt.Scale(domain=kinds, range=[1.0, 0.55]),
                            legend=alt.Legend(orient="top", columns=STACK_NARROW)) if len(kinds) > 1 else alt.value(0.8),
        tooltip=tooltip)
    ticks = alt.Chart(frame).mark_tick(color=INK, thickness=3).encode(
        x=x, xOffset=offset, y=alt.Y("weights_bytes:Q", scale=alt.Scale(type="log")),
        tooltip=tooltip)
    # a plain width (a bar's room times the bars, band padding included), so that a phone's narrow
    # column fits the chart to it (ui/page/plot.py) where a width per bar would overflow it
    bar = 34 if len(models) > 2 else 44
    return alt.layer(bars, ticks, title=alt.Title(
        label("projection_title", lang), subtitle=[label("projection_sub", lang)],
    )).properties(width=round(bar * len(models) * len(contexts) * 1.3), height=320)


def projection_table(rows: list[dict], lang: str = "en") -> pd.DataFrame:
    """The projection as a table with readable sizes, one row per (model, context)."""
    frame = _projection_frame(rows, lang)
    yes, no = label("yes", lang), label("no", lang)
    return pd.DataFrame({
        label("model", lang): frame["model"],
        label("context_axis", lang): frame["context"].map(lambda c: f"{c:,}"),
        label("col_kv", lang): frame["kv_bytes"].map(fmt_bytes),
        label("col_weights", lang): frame["weights_bytes"].map(fmt_bytes),
        label("col_total", lang): (frame["kv_bytes"] + frame["weights_bytes"]).map(fmt_bytes),
        label("col_ratio", lang): (frame["kv_bytes"] / frame["weights_bytes"]).map(lambda r: f"{r:.2f}×"),
        label("measured", lang): frame["measured"].map(lambda m: yes if m else no),
    })
