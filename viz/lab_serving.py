"""Lab charts for what servers do: the batching frontier and the price of verifying k tokens
(engine/lab/batching.py). Same conventions as viz/lab: medians with min–max, every label in the
page's language, ValueError (drawn as a notice) when the experiment has not been run."""

from __future__ import annotations

import altair as alt
import pandas as pd

from .fmt import fmt_ms
from .lab import _partial_note, _ratio, section
from .labels import label
from .theme import BLUE, GREY, INK, ORANGE


# --- 5 batching ---------------------------------------------------------------------------------
def batching_chart(result: dict, lang: str = "en") -> alt.LayerChart:
    """Decode step time against batch size (log 2), with the roofline's lower bound for each batch
    (the larger of reading the weights and doing the arithmetic) and a mark where it starts to grow."""
    part = section(result, "batching", lang)
    rows = part.get("rows") or []
    if not rows:
        raise ValueError(label("lab_err_no_rows", lang))
    measured, bound = label("lab_batch_measured", lang), label("lab_batch_bound", lang)
    frame = pd.DataFrame([{"batch": r["batch"], "ms": r["step_ms"]["median"], "low": r["step_ms"]["min"],
                           "high": r["step_ms"]["max"], "kind": measured, "tok_s": r["tokens_per_s"],
                           "speedup": _ratio(r.get("speedup"))} for r in rows])
    bounds = pd.DataFrame([{"batch": r["batch"], "ms": r["bound_ms"], "kind": bound,
                            "by": label("lab_bound_by_compute" if r["compute_bound_ms"] >= r["bandwidth_bound_ms"]
                                        else "lab_bound_by_memory", lang)} for r in rows if "bound_ms" in r])
    x = alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title=label("lab_batch_axis", lang),
              axis=alt.Axis(values=[r["batch"] for r in rows], format="d"))
    y = alt.Y("ms:Q", title=label("lab_batch_ms", lang), scale=alt.Scale(type="log", nice=False, padding=12))
    color = alt.Color("kind:N", title=None, scale=alt.Scale(domain=[measured, bound], range=[BLUE, GREY]),
                      legend=alt.Legend(orient="top"))
    tooltip = [alt.Tooltip("batch:Q", title=label("lab_batch_axis", lang)),
               alt.Tooltip("ms:Q", title="ms", format=".1f"),
               alt.Tooltip("tok_s:Q", title=label("lab_batch_tok_s", lang), format=".1f"),
               alt.Tooltip("speedup:N", title=label("lab_batch_vs_one", lang))]
    layers = [alt.Chart(frame).mark_rule(color=BLUE).encode(
                  x=x, y=alt.Y("low:Q", scale=alt.Scale(type="log", nice=False, padding=12)), y2="high:Q"),
              alt.Chart(frame).mark_line(point=alt.OverlayMarkDef(size=70, filled=True)).encode(
                  x=x, y=y, color=color, tooltip=tooltip)]
    if not bounds.empty:
        layers.append(alt.Chart(bounds).mark_line(strokeDash=[6, 4]).encode(
            x=x, y=y, color=color, tooltip=[alt.Tooltip("batch:Q"), alt.Tooltip("ms:Q", format=".2f"),
                                            alt.Tooltip("by:N", title=label("lab_limited", lang))]))
    grows = part.get("grows_from_batch")
    if grows:
        mark = pd.DataFrame([{"batch": grows, "text": label("lab_batch_grows", lang, b=grows)}])
        layers += [alt.Chart(mark).mark_rule(color=ORANGE, strokeDash=[2, 2]).encode(x=x),
                   alt.Chart(mark).mark_text(align="left", dx=5, dy=-6, color=INK, fontSize=12, baseline="bottom").encode(
                       x=x, y=alt.value(0), text="text:N")]
    subtitle = [label("lab_batch_sub", lang, p=part["prompt_tokens"], n=part["decode_steps"]), *_partial_note(part, lang)]
    return alt.layer(*layers, title=alt.Title(label("lab_batch_title", lang), subtitle=subtitle)).properties(
        width=520, height=280)


def batching_table(result: dict, lang: str = "en") -> pd.DataFrame:
    part = section(result, "batching", lang)
    return pd.DataFrame([{
        label("lab_batch_axis", lang): r["batch"],
        label("lab_batch_step", lang): f"{fmt_ms(r['step_ms']['median'])} ({fmt_ms(r['step_ms']['min'])}–"
                                       f"{fmt_ms(r['step_ms']['max'])})",
        label("lab_batch_tok_s", lang): f"{r['tokens_per_s']:.1f}",
        label("lab_batch_vs_one", lang): _ratio(r.get("speedup")),
        label("lab_batch_bound", lang): fmt_ms(r.get("bound_ms")),
        label("lab_batch_intensity", lang): f"{r['intensity']:.2f}",
    } for r in part.get("rows", [])])


def batching_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "batching", lang)
    rows = part.get("rows") or []
    if not rows:
        return label("lab_partial", lang)
    best = max(rows, key=lambda r: r["tokens_per_s"])
    text = label("lab_batch_means", lang, b=best["batch"], x=_ratio(best.get("speedup")),
                 tok=f"{best['tokens_per_s']:.0f}", one=f"{rows[0]['tokens_per_s']:.1f}")
    at8 = part.get("speedup_at_8")
    if at8 is not None and at8 < 4:
        text += " " + label("lab_batch_cpu", lang, x=_ratio(at8), b=part.get("grows_from_batch") or "—",
                            ridge=part.get("compute_bound_from_batch") or "—")
    return text


# --- 6 verifying k tokens -----------------------------------------------------------------------
def verify_chart(result: dict, lang: str = "en") -> alt.LayerChart:
    """One pass over k tokens: its time against k, beside k separate one-token passes."""
    part = section(result, "verify", lang)
    rows = part.get("rows") or []
    if not rows:
        raise ValueError(label("lab_err_no_rows", lang))
    one = rows[0]["ms"]["median"]
    pass_k, k_passes = label("lab_verify_one_pass", lang), label("lab_verify_k_passes", lang)
    frame = pd.DataFrame([{"k": r["k"], "ms": r["ms"]["median"], "low": r["ms"]["min"], "high": r["ms"]["max"],
                           "kind": pass_k, "vs": _ratio(r.get("vs_one"))} for r in rows] +
                         [{"k": r["k"], "ms": one * r["k"], "low": None, "high": None, "kind": k_passes, "vs": ""}
                          for r in rows])
    x = alt.X("k:Q", scale=alt.Scale(type="log", base=2), title=label("lab_verify_axis", lang),
              axis=alt.Axis(values=[r["k"] for r in rows], format="d"))
    color = alt.Color("kind:N", title=None, scale=alt.Scale(domain=[pass_k, k_passes], range=[BLUE, GREY]),
                      legend=alt.Legend(orient="top"))
    lines = alt.Chart(frame).mark_line(point=alt.OverlayMarkDef(size=70, filled=True)).encode(
        x=x, y=alt.Y("ms:Q", title=label("lab_verify_ms", lang)), color=color,
        strokeDash=alt.condition(alt.datum.kind == k_passes, alt.value([6, 4]), alt.value([1, 0])),
        tooltip=[alt.Tooltip("k:Q"), alt.Tooltip("ms:Q", format=".1f"),
                 alt.Tooltip("vs:N", title=label("lab_verify_vs_one", lang))])
    spread_ = alt.Chart(frame.dropna()).mark_rule(color=BLUE).encode(x=x, y="low:Q", y2="high:Q")
    subtitle = [label("lab_verify_sub", lang, p=part["prompt_tokens"]), *_partial_note(part, lang)]
    return alt.layer(spread_, lines, title=alt.Title(label("lab_verify_title", lang), subtitle=subtitle)).properties(
        width=520, height=260)


def verify_table(result: dict, lang: str = "en") -> pd.DataFrame:
    part = section(result, "verify", lang)
    return pd.DataFrame([{
        label("lab_verify_axis", lang): r["k"],
        label("lab_verify_ms", lang): f"{fmt_ms(r['ms']['median'])} ({fmt_ms(r['ms']['min'])}–{fmt_ms(r['ms']['max'])})",
        label("lab_verify_per_token", lang): fmt_ms(r["ms_per_token"]),
        label("lab_verify_vs_one", lang): _ratio(r.get("vs_one")),
    } for r in part.get("rows", [])])


def verify_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "verify", lang)
    rows = part.get("rows") or []
    if len(rows) < 2:
        return label("lab_partial", lang)
    last = rows[-1]
    return label("lab_verify_means", lang, k=last["k"], x=_ratio(last.get("vs_one")),
                 per=fmt_ms(last["ms_per_token"]), one=fmt_ms(rows[0]["ms"]["median"]))


SUMMARIES = {"batching": batching_summary, "verify": verify_summary}
