"""Acceleration lab charts (chapter 6): pure functions of the dict `engine.lab.run_lab` returns.

One chart, one table and one two-line reading per experiment: here the KV cache (`kv_chart`) and the
attention kernels (`attention_chart`) and what every lab module shares; the weight formats in
lab_weights.py, the roofline in lab_roofline.py, what servers do in lab_serving.py. `*_table` give
small DataFrames; `*_summary` give the sentences that say what the numbers mean. A section that is missing or empty raises ValueError
with a message for the page (which shows it in place of the chart).
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from viz.fmt import DASH, fmt_bytes, fmt_ms
from viz.charts.kv import BYTES_LABEL, _powers_of_two
from viz.text.labels import LABELS, label
from viz.charts.theme import BLUE, INK, ORANGE, STACK_NARROW
from viz.text import lab_verdicts

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
    title = lab_verdicts.kv_title(part, lang) or label("lab_kv_title_partial", lang)
    same = part.get("identical_tokens")
    subtitle = [label("lab_kv_sub", lang, n=part["new_tokens"], p=part.get("prompt_tokens") or "?",
                      r=part["repeats"]),
                label("lab_same_tokens" if same else "lab_diff_tokens", lang) if same is not None else "",
                *_partial_note(part, lang)]
    color = alt.Color("mode:N", sort=modes, title=None, legend=alt.Legend(orient="top", columns=STACK_NARROW),
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
        t for t in (tpot, lab_verdicts.kv_speedup(part, lang),
                    lab_verdicts.kv_lines(part, lang, lab_verdicts.kv_reading(result)), ) if t)


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
    color = alt.Color("impl:N", sort=impls, title=label("lab_kernel", lang), legend=alt.Legend(orient="top", columns=STACK_NARROW))
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
    return lab_verdicts.attention(part, lang, IMPL_NAMES)


SUMMARIES = {"kv_cache": kv_summary, "attention": attention_summary}
