"""Acceleration lab charts (chapter 6): pure functions of the dict `engine.lab.run_lab` returns.

One chart, one table and one two-line reading per experiment: `kv_chart`, `attention_chart`,
`weights_chart`, `roofline_chart`; `*_table` give small DataFrames; `*_summary` give the
sentences that say what the numbers mean. A section that is missing or empty raises ValueError
with a message for the page (which shows it in place of the chart).
"""

from __future__ import annotations

import math
import re

import altair as alt
import pandas as pd

from viz.fmt import DASH, fmt_bytes, fmt_ms
from viz.charts.kv import BYTES_LABEL, _powers_of_two
from viz.text.labels import LABELS, label
from viz.charts.theme import BLUE, INK, ORANGE
from viz.text import verdicts

FORMAT_NAMES = {"fp32": "fp32", "bf16": "bf16", "int8": "int8 (LLM.int8)", "bf16-int8": "int8 weight-only (bf16)"}


def format_name(key: str, lang: str) -> str:
    """A weight format as the page names it ("4-bit (nf4)" / "4 位 (nf4)")."""
    return label("lab_nf4", lang) if key == "nf4" else FORMAT_NAMES.get(key, key)
IMPL_NAMES = {"eager": "eager", "sdpa": "SDPA", "flash_attention_2": "FlashAttention-2"}


def section(result: dict | None, name: str, lang: str) -> dict:
    """One experiment's part of a lab result, or ValueError saying it has not been run."""
    part = (result or {}).get(name)
    if not part:
        raise ValueError(label("lab_err_not_run", lang))
    return part


def _finite(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _ratio(x: float | None) -> str:
    return DASH if _finite(x) is None else (f"{x:.1f}×" if x >= 10 else f"{x:.2f}×")


def why(entry: dict, lang: str) -> str:
    """Why a kernel, length or format was not measured, in `lang` when the engine gave a known code
    (the engine's English sentence otherwise)."""
    key = f"lab_why_{entry.get('code')}"
    if key in LABELS:
        return label(key, lang, **{k: v for k, v in entry.items() if k != "code"})
    return str(entry.get("reason", ""))


def _partial_note(part: dict, lang: str) -> list[str]:
    return [label("lab_partial", lang)] if part.get("partial") else []


# --- 1 KV cache on / off ------------------------------------------------------------------------
def _kv_frame(part: dict, lang: str) -> pd.DataFrame:
    names = {"cache_on": label("lab_cache_on", lang), "cache_off": label("lab_cache_off", lang)}
    rows = []
    for key, run in part.get("runs", {}).items():
        for step in range(1, len(run["step_ms"])):          # step 0 is the first token (prefill)
            rows.append({"mode": names[key], "step": step, "ms": run["step_ms"][step],
                         "low": run["step_ms_min"][step], "high": run["step_ms_max"][step],
                         "kv_tokens": run["kv_tokens"][step] if key == "cache_on" else 0,
                         "sequence": part.get("prompt_tokens", 0) + step})
    return pd.DataFrame(rows)


def kv_chart(result: dict, lang: str = "en") -> alt.LayerChart:
    """Milliseconds per decode step with the cache on and off (median line, min–max band)."""
    part = section(result, "kv_cache", lang)
    frame = _kv_frame(part, lang)
    if frame.empty:
        raise ValueError(label("lab_err_no_steps", lang))
    modes = [label("lab_cache_on", lang), label("lab_cache_off", lang)]
    title = verdicts.kv_title(part, lang) or label("lab_kv_title_partial", lang)
    same = part.get("identical_tokens")
    subtitle = [label("lab_kv_sub", lang, n=part["new_tokens"], p=part.get("prompt_tokens") or "?",
                      r=part["repeats"]),
                label("lab_same_tokens" if same else "lab_diff_tokens", lang) if same is not None else "",
                *_partial_note(part, lang)]
    color = alt.Color("mode:N", sort=modes, title=None, legend=alt.Legend(orient="top"),
                      scale=alt.Scale(domain=modes, range=[BLUE, ORANGE]))
    x = alt.X("step:Q", title=label("lab_decode_step", lang), axis=alt.Axis(format="d", tickMinStep=1),
              scale=alt.Scale(domain=[1, max(int(frame["step"].max()), 2)], nice=False))
    tooltip = [alt.Tooltip("mode:N", title=label("run", lang)),
               alt.Tooltip("step:Q", title=label("step", lang)),
               alt.Tooltip("sequence:Q", title=label("lab_sequence", lang)),
               alt.Tooltip("ms:Q", title=label("lab_median_ms", lang), format=".1f"),
               alt.Tooltip("low:Q", title="min", format=".1f"),
               alt.Tooltip("high:Q", title="max", format=".1f")]
    band = alt.Chart(frame).mark_area(opacity=0.18).encode(x=x, y="low:Q", y2="high:Q", color=color)
    line = alt.Chart(frame).mark_line(strokeWidth=2.5, point=alt.OverlayMarkDef(size=30, filled=True)).encode(
        x=x, y=alt.Y("ms:Q", title=label("lab_ms_per_step", lang), scale=alt.Scale(zero=True)),
        color=color, tooltip=tooltip)
    return alt.layer(band, line, title=alt.Title(title, subtitle=[s for s in subtitle if s])).properties(
        width=620, height=280)


def kv_table(result: dict, lang: str = "en") -> pd.DataFrame:
    part = section(result, "kv_cache", lang)
    names = {"cache_on": label("lab_cache_on", lang), "cache_off": label("lab_cache_off", lang)}
    rows = []
    for key, run in part.get("runs", {}).items():
        spread = run.get("spread", {})
        rows.append({
            label("run", lang): names[key],
            label("ttft", lang): fmt_ms(run.get("ttft_ms")),
            label("tpot", lang): fmt_ms(run.get("tpot_ms")),
            label("e2e", lang): fmt_ms(run.get("e2e_ms")),
            label("lab_spread", lang): _range_ms(spread.get("e2e_ms")),
            label("tokens_per_s", lang): f"{run['tokens_per_s']:.1f}" if _finite(run.get("tokens_per_s")) else DASH,
            label("lab_runs", lang): run.get("runs_measured", 0),
        })
    return pd.DataFrame(rows)


def _range_ms(spread: dict | None) -> str:
    if not spread:
        return DASH
    return f"{fmt_ms(spread['min'])} – {fmt_ms(spread['max'])}"


def kv_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "kv_cache", lang)
    runs = part.get("runs", {})
    if "cache_on" not in runs or "cache_off" not in runs:
        return label("lab_partial", lang)
    tpot = label("verdict_kv_tpot", lang, on=fmt_ms(runs["cache_on"].get("tpot_ms")),
                 off=fmt_ms(runs["cache_off"].get("tpot_ms")))
    # how each line moves with the context, and the speed-up end to end: said from the figure
    return ("" if lang == "zh" else " ").join(
        t for t in (tpot, verdicts.kv_speedup(part, lang), verdicts.kv_lines(part, lang)) if t)


def _byte_ticks(largest: float) -> list[int]:
    """Axis ticks for a byte axis: 0 and up to three steps of a power of two, e.g. 0, 256, 512 MiB."""
    step = 1
    while largest / step > 3:
        step *= 2
    return [i * step for i in range(int(largest // step) + 1)]


# --- 2 attention kernels ------------------------------------------------------------------------
def _attention_frame(part: dict, lang: str) -> pd.DataFrame:
    rows = [{"impl": IMPL_NAMES.get(r["implementation"], r["implementation"]), "tokens": r["tokens"],
             "ms": r["ms"], "low": r["spread"]["ms"]["min"], "high": r["spread"]["ms"]["max"],
             "peak_bytes": max(r["peak_bytes"], 1), "peak": fmt_bytes(r["peak_bytes"]),
             "matrix_bytes": r["attention_matrix_bytes"], "matrix": fmt_bytes(r["attention_matrix_bytes"]),
             "diff": r["max_abs_logit_diff_vs_eager"],
             "match": label("yes" if r["matches_eager"] else "no", lang)}
            for r in part.get("rows", [])]
    return pd.DataFrame(rows)


def attention_chart(result: dict, lang: str = "en") -> alt.HConcatChart:
    """Prefill time and peak memory against prompt length, one line per attention implementation;
    the memory panel adds the size of one layer's score matrix, which eager stores whole."""
    part = section(result, "attention", lang)
    frame = _attention_frame(part, lang)
    if frame.empty:
        raise ValueError(label("lab_err_no_rows", lang))
    impls = list(dict.fromkeys(frame["impl"]))
    lengths = sorted(frame["tokens"].unique().tolist())
    color = alt.Color("impl:N", sort=impls, title=label("lab_kernel", lang), legend=alt.Legend(orient="top"))
    x = alt.X("tokens:Q", title=label("prompt_tokens_axis", lang),
              scale=alt.Scale(type="log", base=2, nice=False, domain=[lengths[0], lengths[-1]]),
              axis=alt.Axis(values=lengths, format="d"))
    tooltip = [alt.Tooltip("impl:N", title=label("lab_kernel", lang)),
               alt.Tooltip("tokens:Q", title=label("prompt_tokens_axis", lang)),
               alt.Tooltip("ms:Q", title=label("lab_median_ms", lang), format=".1f"),
               alt.Tooltip("low:Q", title="min", format=".1f"), alt.Tooltip("high:Q", title="max", format=".1f"),
               alt.Tooltip("peak:N", title=label("lab_peak_memory", lang)),
               alt.Tooltip("diff:Q", title=label("lab_max_diff", lang), format=".2e"),
               alt.Tooltip("match:N", title=label("lab_matches", lang))]
    base = alt.Chart(frame).encode(x=x, color=color, tooltip=tooltip)
    time_panel = alt.layer(
        base.mark_errorbar(ticks=True).encode(y=alt.Y("low:Q", title=label("lab_prefill_ms", lang),
                                                      scale=alt.Scale(type="log")), y2="high:Q"),
        base.mark_line(strokeWidth=2.5, point=alt.OverlayMarkDef(size=50, filled=True)).encode(y="ms:Q"),
    ).properties(width=330, height=260, title=alt.Title(label("lab_time_panel", lang), fontSize=14, fontWeight="normal"))
    matrix = frame.drop_duplicates("tokens").assign(what=label("lab_matrix", lang))
    memory_values = pd.concat([frame["peak_bytes"], matrix["matrix_bytes"]])
    y_mem = alt.Y("peak_bytes:Q", title=label("lab_peak_memory", lang), scale=alt.Scale(type="log"),
                  axis=alt.Axis(labelExpr=BYTES_LABEL, values=_powers_of_two(memory_values.min(),
                                                                             memory_values.max())))
    memory_panel = alt.layer(
        base.mark_line(strokeWidth=2.5, point=alt.OverlayMarkDef(size=50, filled=True)).encode(y=y_mem),
        alt.Chart(matrix).mark_line(color=INK, strokeDash=[5, 4], strokeWidth=1.5).encode(
            x=x, y=alt.Y("matrix_bytes:Q", scale=alt.Scale(type="log")),
            tooltip=[alt.Tooltip("tokens:Q", title=label("prompt_tokens_axis", lang)),
                     alt.Tooltip("matrix:N", title=label("lab_matrix", lang))]),
        alt.Chart(matrix.head(1)).mark_text(align="left", baseline="top", dx=4, dy=6, color=INK, fontSize=12).encode(
            x=x, y=alt.Y("matrix_bytes:Q", scale=alt.Scale(type="log")), text="what:N"),
    ).properties(width=330, height=260, title=alt.Title(label("lab_memory_panel", lang), fontSize=14, fontWeight="normal"))
    subtitle = [label("lab_attn_sub", lang, r=part.get("repeats", 0), dtype=part.get("dtype", "")),
                *[label("lab_unavailable", lang, what=IMPL_NAMES.get(u["implementation"], u["implementation"]),
                        reason=f"{label('lab_not_here', lang)} — {why(u, lang)}")
                  for u in part.get("unavailable", [])],
                *[label("lab_skipped", lang, n=s["tokens"], reason=why(s, lang)) for s in part.get("skipped", [])],
                *_partial_note(part, lang)]
    return alt.hconcat(time_panel, memory_panel, title=alt.Title(label("lab_attn_title", lang), subtitle=subtitle)
                       ).resolve_scale(color="shared")


def attention_table(result: dict, lang: str = "en") -> pd.DataFrame:
    frame = _attention_frame(section(result, "attention", lang), lang)
    if frame.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        label("lab_kernel", lang): frame["impl"],
        label("prompt_tokens_axis", lang): frame["tokens"],
        label("lab_prefill_ms", lang): frame["ms"].map(fmt_ms),
        label("lab_spread", lang): [f"{fmt_ms(a)} – {fmt_ms(b)}" for a, b in zip(frame["low"], frame["high"])],
        label("lab_peak_memory", lang): frame["peak"],
        label("lab_matrix", lang): frame["matrix"],
        label("lab_max_diff", lang): frame["diff"].map(lambda d: f"{d:.1e}"),
        label("lab_matches", lang): frame["match"],
    })


def attention_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "attention", lang)
    rows = part.get("rows", [])
    longest = max((r["tokens"] for r in rows), default=None)
    at = {r["implementation"] for r in rows if r["tokens"] == longest}
    if "eager" not in at or len(at) < 2:
        return label("lab_partial", lang)
    return verdicts.attention(part, lang, IMPL_NAMES)


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
    missing = frame[~frame["available"]].assign(text=label("lab_not_here", lang))
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
    return verdicts.weights(part, lang, {key: format_name(key, lang) for key in ok}) or label("lab_partial", lang)


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
                 n=part.get("quality_positions", "?"), baseline=verdicts.baseline(part, lang, brief=True))


# --- 4 roofline ---------------------------------------------------------------------------------
def roofline_models(result: dict | None) -> list[str]:
    """The model names in a roofline result, this model first."""
    part = (result or {}).get("roofline") or {}
    return list(dict.fromkeys(r["model"] for r in part.get("rows", [])))


def _roofline_frame(part: dict, model: str | None, lang: str) -> pd.DataFrame:
    rows = part.get("rows", [])
    model = model or (rows[0]["model"] if rows else None)
    bound, measured = label("lab_bound", lang), label("measured", lang)
    out = []
    for r in (r for r in rows if r["model"] == model):
        hw = hardware_name(r, lang) + ("" if r["fits_in_memory"] else f" ({label('lab_does_not_fit', lang)})")
        for metric, key in (("TTFT", "ttft"), ("TPOT", "tpot")):
            out.append({"hardware": hw, "metric": metric, "kind": bound, "ms": r[f"{key}_bound_ms"],
                        "detail": (label(f"lab_bound_by_{r['ttft_bound_by']}", lang) if key == "ttft"
                                   else label("lab_bound_by_memory", lang)),
                        "projection": label("lab_projection" if r["projection"] else "lab_measured_here", lang),
                        "ratio": ""})
            if _finite(r.get(f"measured_{key}_ms")):
                out.append({"hardware": hw, "metric": metric, "kind": measured, "ms": r[f"measured_{key}_ms"],
                            "detail": label("lab_measured_here", lang),
                            "projection": label("lab_measured_here", lang),
                            "ratio": _ratio(r.get(f"{key}_ratio"))})
    return pd.DataFrame(out)


def roofline_chart(result: dict, model: str | None = None, lang: str = "en") -> alt.LayerChart:
    """Lower bounds of TTFT and TPOT for one model on each hardware (log scale), and, on this machine,
    what was measured, with the ratio measured ÷ bound."""
    part = section(result, "roofline", lang)
    model = model if model in roofline_models(result) else (roofline_models(result) or [None])[0]
    frame = _roofline_frame(part, model, lang)
    if frame.empty:
        raise ValueError(label("lab_err_no_rows", lang))
    hardware = list(dict.fromkeys(frame["hardware"]))
    bound, measured = label("lab_bound", lang), label("measured", lang)
    x = alt.X("hardware:N", sort=hardware, title=None, axis=alt.Axis(labelAngle=-20, labelLimit=320))
    offset = alt.XOffset("metric:N", sort=["TTFT", "TPOT"])
    y = alt.Y("ms:Q", title=label("lab_ms_log", lang), scale=alt.Scale(type="log"))
    color = alt.Color("metric:N", sort=["TTFT", "TPOT"], title=None, legend=alt.Legend(orient="top"),
                      scale=alt.Scale(domain=["TTFT", "TPOT"], range=[BLUE, ORANGE]))
    shape = alt.Shape("kind:N", title=None, legend=alt.Legend(orient="top"),
                      scale=alt.Scale(domain=[bound, measured], range=["circle", "diamond"]))
    tooltip = [alt.Tooltip("hardware:N", title=label("lab_hardware", lang)), alt.Tooltip("metric:N", title=" "),
               alt.Tooltip("kind:N", title=" "), alt.Tooltip("ms:Q", title="ms", format=".4~g"),
               alt.Tooltip("detail:N", title=label("source", lang)),
               alt.Tooltip("ratio:N", title=label("lab_ratio", lang))]
    points = alt.Chart(frame).mark_point(size=110, filled=True, opacity=0.9).encode(
        x=x, xOffset=offset, y=y, color=color, shape=shape, tooltip=tooltip)
    here = frame[frame["ratio"] != ""]
    rules = alt.Chart(frame[frame["hardware"].isin(here["hardware"])]).mark_rule(strokeWidth=1.5).encode(
        x=x, xOffset=offset, y=alt.Y("min(ms):Q", scale=alt.Scale(type="log")), y2="max(ms):Q", color=color)
    text = alt.Chart(here).mark_text(align="left", dx=8, fontSize=12, color=INK, fontWeight="bold").encode(
        x=x, xOffset=offset, y=y, text="ratio:N")
    rows = [r for r in part["rows"] if r["model"] == model]
    subtitle = [label("lab_roof_sub", lang, p=part["prompt_tokens"], n=part["new_tokens"]),
                label("lab_roof_sub2", lang), *_partial_note(part, lang)]
    title = label("lab_roof_title", lang, model=model)
    if rows and all(r["projection"] for r in rows):
        title += f" · {label('lab_projection', lang)}"
    return alt.layer(rules, points, text, title=alt.Title(title, subtitle=subtitle)).properties(
        width=alt.Step(54), height=300)


def roofline_table(result: dict, model: str | None = None, lang: str = "en") -> pd.DataFrame:
    """One row per hardware, narrow enough for the lab's column: the two bounds (the TTFT one with
    what limits it), what was measured here (or "projection"), the ratio, and whether it fits."""
    part = section(result, "roofline", lang)
    rows = [r for r in part.get("rows", []) if model is None or r["model"] == model]
    yes, no = label("yes", lang), label("no", lang)

    def limited_by(r: dict) -> str:
        return label(f"lab_bound_by_{r['ttft_bound_by']}", lang)

    def measured(r: dict) -> str:
        if r["projection"] or not _finite(r.get("measured_ttft_ms")):
            return label("lab_projection", lang)
        return f"{fmt_ms(r['measured_ttft_ms'])} · {fmt_ms(r.get('measured_tpot_ms'))}"
    return pd.DataFrame([{
        **({label("model", lang): r["model"]} if model is None else {}),
        label("lab_hardware", lang): hardware_name(r, lang),
        label("lab_ttft_bound", lang): f"{fmt_ms(r['ttft_bound_ms'])} ({limited_by(r)})",
        label("lab_tpot_bound", lang): fmt_ms(r["tpot_bound_ms"]),
        label("lab_measured_pair", lang): measured(r),
        label("lab_ratio", lang): (f"{_ratio(r.get('ttft_ratio'))} · {_ratio(r.get('tpot_ratio'))}"
                                   if _finite(r.get("ttft_ratio")) else DASH),
        label("lab_fits", lang): yes if r["fits_in_memory"] else no,
    } for r in rows])


THIS_CPU = re.compile(r"this machine \(CPU, (\d+) threads\)")


def hardware_name(row: dict, lang: str) -> str:
    """A roofline row's hardware in the page's language: the engine names this machine's CPU in
    English ("this machine (CPU, 2 threads)"); GPU and catalogue names are names."""
    cpu = THIS_CPU.fullmatch(row["hardware"])
    return label("lab_this_cpu", lang, threads=cpu.group(1)) if cpu else row["hardware"]


def roofline_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "roofline", lang)
    here = next((r for r in part.get("rows", []) if not r["projection"] and _finite(r.get("tpot_ratio"))), None)
    machine = next((h for h in part.get("hardware", []) if h.get("measured")), None)
    if here is None or machine is None:
        return label("lab_partial", lang)
    means = label("lab_roof_means", lang, bw=f"{machine['bandwidth_bytes_s'] / 1e9:.1f}",
                  flops=f"{machine['peak_flops'] / 1e9:.0f}", tpot=fmt_ms(here["measured_tpot_ms"]),
                  bound=fmt_ms(here["tpot_bound_ms"]), ratio=_ratio(here["tpot_ratio"]),
                  ttft_ratio=_ratio(here["ttft_ratio"]))
    return (" " if lang == "en" else "").join([means, verdicts.roofline_prefill(part, lang)])


SUMMARIES = {"kv_cache": kv_summary, "attention": attention_summary, "weights": weights_summary,
             "roofline": roofline_summary}
