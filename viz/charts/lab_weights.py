"""Chapter 6's weight formats (fp32 / bf16 / int8 / nf4): memory, time per token and agreement with
fp32, from the lab's result (engine/lab/weights.py)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from viz.charts.kv import BYTES_LABEL
from viz.charts.lab import format_name, section, _finite, why, _partial_note, _byte_ticks
from viz.charts.theme import BLUE, INK, ORANGE
from viz.fmt import DASH, fmt_bytes, fmt_ms
from viz.text import lab_verdicts
from viz.text.labels import label


# --- 3 weight formats ---------------------------------------------------------------------------
def _weights_frame(part: dict, lang: str) -> pd.DataFrame:
    rows = []
    for r in part.get("rows", []):
        name = format_name(r["format"], lang)
        if not r.get("available"):
            rows.append({"format": name, "available": False, "reason": why(r, lang)})
            continue
        rows.append({"format": name, "available": True, "reason": "",
                     "weight_bytes": r["weight_bytes"], "memory": fmt_bytes(r["weight_bytes"]),
                     "tpot_ms": r.get("tpot_ms"), "ttft_ms": r.get("ttft_ms"),
                     "tokens_per_s": r.get("tokens_per_s"),
                     "agreement": r["top1_agreement"], "kl": r["mean_kl"]})
    return pd.DataFrame(rows)


def weights_chart(result: dict, lang: str = "en") -> alt.HConcatChart:
    """Three bar panels per format: weight memory, time per token, agreement with fp32.
    A format that cannot run here keeps its row, with "not available here" instead of bars."""
    part = section(result, "weights", lang)
    frame = _weights_frame(part, lang)
    if frame.empty:
        raise ValueError(label("lab_err_no_rows", lang))
    order = list(frame["format"])
    ok = frame[frame["available"]]
    # only the columns its text layer reads: the row's empty figures are NaN, which a spec cannot hold
    missing = frame.loc[~frame["available"], ["format"]].assign(text=label("lab_not_here", lang))
    y = alt.Y("format:N", sort=order, title=None, scale=alt.Scale(domain=order))
    tooltip = [alt.Tooltip("format:N", title=label("lab_format", lang)),
               alt.Tooltip("memory:N", title=label("lab_weight_memory", lang)),
               alt.Tooltip("ttft_ms:Q", title=label("ttft", lang), format=".1f"),
               alt.Tooltip("tpot_ms:Q", title=label("tpot", lang), format=".1f"),
               alt.Tooltip("agreement:Q", title=label("lab_agreement", lang), format=".1%"),
               alt.Tooltip("kl:Q", title=label("lab_kl", lang), format=".4f")]

    def panel(field: str, title: str, fmt: str, color: str, text_expr: str, domain=None, extra=()):
        scale = alt.Scale(domain=domain) if domain else alt.Scale(zero=True)
        bars = alt.Chart(ok).mark_bar(color=color, height={"band": 0.7}).encode(
            x=alt.X(f"{field}:Q", title=title, scale=scale,
                    axis=alt.Axis(labelExpr=BYTES_LABEL, values=_byte_ticks(ok[field].max())) if fmt == "bytes"
                    else alt.Axis(format=fmt, tickCount=4)),
            y=y, tooltip=tooltip)
        text = alt.Chart(ok).transform_calculate(t=text_expr).mark_text(
            align="left", dx=4, color=INK, fontSize=12).encode(x=f"{field}:Q", y=y, text="t:N")
        layers = [bars, text, *extra]
        if not missing.empty:
            layers.append(alt.Chart(missing).mark_text(align="left", color="#8a8f99", fontSize=12,
                                                       fontStyle="italic").encode(
                x=alt.value(4), y=y, text="text:N"))
        return alt.layer(*layers).properties(width=190, height=alt.Step(34))

    gguf = part.get("gguf")
    # the original GGUF file (Q4_1) the embedded model ships as: a reference line, not a format run here
    extra = [alt.Chart(pd.DataFrame({"bytes": [gguf["bytes"]], "text": [label("lab_gguf_line", lang)]}))
             .mark_rule(color=INK, strokeDash=[4, 3]).encode(x="bytes:Q", tooltip=alt.Tooltip("text:N", title=" "))
             ] if gguf else []
    memory = panel("weight_bytes", label("lab_weight_memory", lang), "bytes", BLUE, "datum.memory", extra=extra)
    tpot = panel("tpot_ms", label("lab_tpot_ms", lang), ",d", ORANGE, "format(datum.tpot_ms, '.1f') + ' ms'")
    agree = panel("agreement", label("lab_agreement", lang), ".0%", "#2e9e6b",
                  "format(datum.agreement, '.1%') + ' · KL ' + format(datum.kl, '.3f')", domain=[0, 1])
    subtitle = [label("lab_weights_sub", lang, n=part.get("new_tokens", 0), r=part.get("repeats", 0),
                      q=part.get("quality_positions", 0)),
                *([label("lab_gguf", lang, size=fmt_bytes(gguf["bytes"]))] if gguf else []),
                *[label("lab_unavailable", lang, what=r["format"], reason=f"{label('lab_not_here', lang)} — {r['reason']}")
                  for r in frame[~frame["available"]].to_dict("records")],
                *_partial_note(part, lang)]
    return alt.hconcat(memory, tpot, agree, spacing=60,
                       title=alt.Title(label("lab_weights_title", lang), subtitle=subtitle))


def weights_table(result: dict, lang: str = "en") -> pd.DataFrame:
    part = section(result, "weights", lang)
    rows = []
    for r in part.get("rows", []):
        name = format_name(r["format"], lang)
        if not r.get("available"):
            rows.append({label("lab_format", lang): name, label("lab_weight_memory", lang): DASH,
                         label("ttft", lang): DASH, label("tpot", lang): DASH, label("tokens_per_s", lang): DASH,
                         label("lab_agreement", lang): DASH, label("lab_kl", lang): DASH,
                         label("lab_note", lang): f"{label('lab_not_here', lang)}: {why(r, lang)}"})
            continue
        same = r.get("same_greedy_tokens_as_fp32")
        rows.append({
            label("lab_format", lang): name,
            label("lab_weight_memory", lang): fmt_bytes(r["weight_bytes"]),
            label("ttft", lang): fmt_ms(r.get("ttft_ms")), label("tpot", lang): fmt_ms(r.get("tpot_ms")),
            label("tokens_per_s", lang): f"{r['tokens_per_s']:.1f}" if _finite(r.get("tokens_per_s")) else DASH,
            label("lab_agreement", lang): f"{r['top1_agreement']:.1%}",
            label("lab_kl", lang): f"{r['mean_kl']:.4f}",
            label("lab_note", lang): label("lab_same_text" if same else "lab_other_text", lang)
            if same is not None else "",
        })
    gguf = part.get("gguf")
    if gguf:
        rows.append({label("lab_format", lang): gguf["format"], label("lab_weight_memory", lang): fmt_bytes(gguf["bytes"]),
                     label("ttft", lang): DASH, label("tpot", lang): DASH, label("tokens_per_s", lang): DASH,
                     label("lab_agreement", lang): DASH, label("lab_kl", lang): DASH,
                     label("lab_note", lang): label("lab_gguf_note", lang)})
    return pd.DataFrame(rows)


def weights_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "weights", lang)
    ok = {r["format"]: r for r in part.get("rows", []) if r.get("available")}
    if "fp32" not in ok or len(ok) < 2:
        return label("lab_partial", lang)
    # each format's memory and speed against fp32, smaller/faster or not as measured
    return lab_verdicts.weights(part, lang, {key: format_name(key, lang) for key in ok}) or label("lab_partial", lang)


def quality_line(result: dict, lang: str = "en") -> str:
    """What each smaller weight format costs in quality, read from the measurement: top-1 agreement
    and KL against fp32 (the baseline here; serving usually starts from bf16)."""
    part = section(result, "weights", lang)
    rows = [r for r in part.get("rows", []) if r.get("available") and r["format"] != "fp32"]
    if not rows:
        return label("lab_partial", lang)
    each = [label("lab_quality_row", lang, fmt=format_name(r["format"], lang),
                  agree=f"{r['top1_agreement']:.1%}", kl=f"{r['mean_kl']:.3f}") for r in rows]
    if lang == "zh":                    # no space after a full-width bracket: "4 位（nf4）选出"
        each = [e.replace("） ", "）") for e in each]
    return label("lab_quality_line", lang, rows=("；" if lang == "zh" else "; ").join(each),
                 n=part.get("quality_positions", "?"), baseline=lab_verdicts.baseline(part, lang, brief=True))




SUMMARIES = {"weights": weights_summary}
