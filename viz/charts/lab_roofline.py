"""Chapter 6's roofline: the lower bounds from bandwidth and FLOP/s beside what was measured here, and
the same bounds on larger GPUs and models (projections), from the lab's result (engine/lab/roofline.py)."""

from __future__ import annotations

import re

import altair as alt
import pandas as pd

from viz.charts.lab import section, _finite, _ratio, _partial_note
from viz.charts.theme import BLUE, INK, ORANGE, STACK_NARROW
from viz.fmt import DASH, fmt_ms
from viz.text import lab_verdicts
from viz.text.labels import label


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
    color = alt.Color("metric:N", sort=["TTFT", "TPOT"], title=None, legend=alt.Legend(orient="top", columns=STACK_NARROW),
                      scale=alt.Scale(domain=["TTFT", "TPOT"], range=[BLUE, ORANGE]))
    shape = alt.Shape("kind:N", title=None, legend=alt.Legend(orient="top", columns=STACK_NARROW),
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
    return (" " if lang == "en" else "").join(x for x in [means, lab_verdicts.roofline_prefill(part, lang),
                                                          same_step_times(result, lang)] if x)


def same_step_times(result: dict, lang: str) -> str:
    """The fp32 decode step of this model is timed by several experiments of one lab run (the cache on,
    the fp32 weights, the roofline, batch 1, verifying k = 1): each its own figure, said together with
    why they differ (each experiment's own steps, contexts and moment of the machine's load)."""
    def first(rows, **match):
        return next((r for r in rows or [] if all(r.get(k) == v for k, v in match.items())), None)
    found = [("lab_kv_heading", ((result.get("kv_cache") or {}).get("runs") or {}).get("cache_on"), "tpot_ms"),
             ("lab_batch_heading", first((result.get("batching") or {}).get("rows"), batch=1), "tpot_ms"),
             ("lab_verify_heading", first((result.get("verify") or {}).get("rows"), k=1), "ms_per_token"),
             ("lab_weights_heading", first((result.get("weights") or {}).get("rows"), format="fp32"), "tpot_ms"),
             ("lab_roof_heading", first((result.get("roofline") or {}).get("rows"), this_model=True,
                                        hardware_measured=True), "measured_tpot_ms")]
    times = sorted((label(key, lang).split(" · ")[0], row[field]) for key, row, field in found
                   if row and _finite(row.get(field)))
    if len(times) < 2:
        return ""
    low, high = min(ms for _, ms in times), max(ms for _, ms in times)
    sep = "、" if lang == "zh" else ", "
    return label("lab_same_step", lang, times=sep.join(label("lab_same_step_one", lang, n=n, ms=fmt_ms(ms))
                                                     for n, ms in times),
                 low=fmt_ms(low), high=fmt_ms(high), x=_ratio(high / low))




SUMMARIES = {"roofline": roofline_summary}
