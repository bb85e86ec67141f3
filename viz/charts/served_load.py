"""A served model under concurrent load (engine/served/load.py), drawn like vLLM's serving
benchmark: latency percentiles and throughput against the number of concurrent streams."""

from __future__ import annotations

import altair as alt
import pandas as pd

from viz.fmt import fmt_ms
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, ORANGE, STACK_NARROW


def load_chart(result: dict, lang: str = "en") -> alt.HConcatChart:
    rows = result.get("levels") or []
    if not rows:
        raise ValueError(label("load_none", lang))
    p50, p95 = label("load_p50", lang), label("load_p95", lang)
    lat = pd.DataFrame([{"c": r["concurrency"], "metric": metric, "pct": name, "ms": r[f"{key}_{q}_ms"]}
                        for r in rows for metric, key in (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"))
                        for name, q in ((p50, "p50"), (p95, "p95")) if r.get(f"{key}_{q}_ms") is not None])
    x = alt.X("c:O", title=label("load_axis", lang), axis=alt.Axis(labelAngle=0))
    lines = alt.Chart(lat).mark_line(point=True).encode(
        x=x, y=alt.Y("ms:Q", title="ms"), color=alt.Color("metric:N", title=None, legend=alt.Legend(orient="top", columns=STACK_NARROW),
                                                           scale=alt.Scale(domain=["TTFT", "TPOT", "ITL"],
                                                                           range=[ORANGE, BLUE, GREY])),
        strokeDash=alt.StrokeDash("pct:N", title=None, sort=[p50, p95],
                                  legend=alt.Legend(orient="top", columns=STACK_NARROW, symbolType="stroke", symbolStrokeColor="#1f2430")),
        tooltip=["c:O", "metric:N", "pct:N", alt.Tooltip("ms:Q", format=".1f")],
    ).properties(width=300, height=220, title=label("load_latency", lang))
    rate = pd.DataFrame([{"c": r["concurrency"], "what": what, "value": r[key]}
                         for r in rows for what, key in ((label("load_throughput", lang), "throughput_tok_s"),)])
    good = pd.DataFrame([{"c": r["concurrency"], "what": label("load_goodput", lang), "value": r["goodput"],
                          "of": f"{r['good_requests']}/{r['requests'] - r['failed']}"} for r in rows])
    bars = alt.Chart(rate).mark_bar(color=BLUE).encode(
        x=x, y=alt.Y("value:Q", title=label("load_throughput", lang)),
        tooltip=["c:O", alt.Tooltip("value:Q", format=".1f")]).properties(
        width=220, height=220, title=label("load_throughput_title", lang))
    goods = alt.Chart(good).mark_bar(color=ORANGE).encode(
        x=x, y=alt.Y("value:Q", title=label("load_goodput", lang)),
        tooltip=["c:O", alt.Tooltip("value:Q", format=".2f"), alt.Tooltip("of:N", title=label("load_met", lang))]
    ).properties(width=220, height=220, title=label("load_goodput_title", lang, ttft=fmt_ms(result["slo"]["ttft_ms"]),
                                                      tpot=fmt_ms(result["slo"]["tpot_ms"])))
    subtitle = [label("load_sub", lang, endpoint=result["endpoint"], n=result["max_tokens"], rounds=result["rounds"])]
    if result.get("stopped"):
        subtitle.append(label("load_stopped", lang, why=result["stopped"]))
    return alt.hconcat(lines, bars, goods, title=alt.Title(label("load_title", lang), subtitle=subtitle))


def load_table(result: dict, lang: str = "en") -> pd.DataFrame:
    return pd.DataFrame([{
        label("load_axis", lang): r["concurrency"],
        "TTFT p50 / p95": f"{fmt_ms(r['ttft_p50_ms'])} / {fmt_ms(r['ttft_p95_ms'])}",
        "TPOT p50 / p95": f"{fmt_ms(r['tpot_p50_ms'])} / {fmt_ms(r['tpot_p95_ms'])}",
        "ITL p50 / p95": f"{fmt_ms(r['itl_p50_ms'])} / {fmt_ms(r['itl_p95_ms'])}",
        label("load_throughput", lang): f"{r['throughput_tok_s']:.1f}",
        label("load_goodput", lang): f"{r['goodput']:.2f} ({r['good_requests']}/{r['requests'] - r['failed']})",
        label("load_failed", lang): f"{r['failed']}" + (f" ({r['errors'][0]})" if r["errors"] else ""),
    } for r in result.get("levels") or []])
