"""Lab charts for what servers do: the batching frontier and the price of verifying k tokens
(engine/lab/batching.py), and speculative decoding (engine/lab/speculative.py). Same conventions as
viz/lab: medians with min–max, every label in the
page's language, ValueError (drawn as a notice) when the experiment has not been run."""

from __future__ import annotations

import altair as alt
import pandas as pd

from engine.schema.specs import short_name

from viz.fmt import fmt_ms
from viz.charts.lab import _partial_note, _ratio, section
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, ORANGE, STACK_NARROW
from viz.text import serving_verdicts

PALE = "#e3e6eb"      # drafted past the end of the output: never judged


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
                      legend=alt.Legend(orient="top", columns=STACK_NARROW))
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
    grows = serving_verdicts.batch_grows_from(part)          # from the rows shown, as the verdict reads them
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
    # where the step time starts to grow, against the roofline's ridge: what limits batching here
    verdict = serving_verdicts.batching(part, lang)
    return f"{text}{'' if lang == 'zh' else ' '}{verdict}" if verdict else text


def _spread_ms(spread: dict) -> str:
    """"median (min–max)" of a measured spread."""
    return f"{fmt_ms(spread['median'])} ({fmt_ms(spread['min'])}–{fmt_ms(spread['max'])})"


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
                      legend=alt.Legend(orient="top", columns=STACK_NARROW))
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
        label("lab_verify_ms", lang): _spread_ms(r["ms"]),
        label("lab_verify_per_token", lang): fmt_ms(r["ms_per_token"]),
        label("lab_verify_vs_one", lang): _ratio(r.get("vs_one")),
    } for r in part.get("rows", [])])


def verify_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "verify", lang)
    rows = part.get("rows") or []
    if len(rows) < 2:
        return label("lab_partial", lang)
    return serving_verdicts.verify(part, lang)         # flat or not, cheaper than k passes or not: measured


# --- 7 speculative decoding ---------------------------------------------------------------------
def arm_name(arm: str, lang: str, draft: str | None = None) -> str:
    """plain, lookup_<k> or draft, in the page's language."""
    if arm.startswith("lookup_"):
        return label("lab_spec_lookup", lang, k=arm.split("_", 1)[1])
    if arm == "draft":
        return label("lab_spec_draft", lang, name=short_name(str(draft or "")))
    return label("lab_spec_plain", lang)


def speculative_chart(result: dict, lang: str = "en") -> alt.VConcatChart:
    """Tokens/s of each arm (plain greedy first), over a strip per speculative arm: one bar per
    verification pass, stacked from the drafted tokens the model accepted, its own token, and the
    drafted tokens it rejected."""
    part = section(result, "speculative", lang)
    rows = part.get("rows") or []
    if not rows:
        raise ValueError(label("lab_err_no_rows", lang))
    names = {r["arm"]: arm_name(r["arm"], lang, part.get("draft_model")) for r in rows}
    order = [names[r["arm"]] for r in rows]
    speed = pd.DataFrame([{"arm": names[r["arm"]], "tok_s": r["tokens_per_s"], "x": _ratio(r.get("speedup")),
                           "passes": r["passes"], "low": r["new_tokens"] / r["ms"]["max"] * 1000,
                           "high": r["new_tokens"] / r["ms"]["min"] * 1000} for r in rows])
    y = alt.Y("arm:N", sort=order, title=None)
    x = alt.X("tok_s:Q", title=label("lab_spec_tok_s", lang))
    bars = alt.Chart(speed).mark_bar(color=BLUE, height=22).encode(
        x=x, y=y, tooltip=[alt.Tooltip("arm:N", title=" "), alt.Tooltip("tok_s:Q", format=".1f"),
                           alt.Tooltip("x:N", title=label("lab_spec_vs_plain", lang)),
                           alt.Tooltip("passes:Q", title=label("lab_spec_passes", lang))])
    whiskers = alt.Chart(speed).mark_rule(color=INK).encode(x="low:Q", x2="high:Q", y=y)
    text = alt.Chart(speed).mark_text(align="left", dx=6, color=INK, fontSize=13).encode(x="high:Q", y=y, text="x:N")
    subtitle = [label("lab_spec_sub", lang, p=part["prompt_tokens"], n=part["max_new_tokens"]),
                *_partial_note(part, lang)]
    top = alt.layer(bars, whiskers, text, title=alt.Title(label("lab_spec_title", lang), subtitle=subtitle)
                    ).properties(width=520, height=34 * len(rows))
    kinds = [label(f"lab_spec_{k}", lang) for k in ("accepted", "own", "rejected", "unused")]
    strip = []
    for arm, passes in (part.get("strips") or {}).items():
        for i, p in enumerate(passes, start=1):
            rest = p["drafted"][p["accepted"]:]
            pieces = (p["drafted"][:p["accepted"]], p["emitted"][p["accepted"]:],
                      rest if p["rejected"] else [], rest if p["unused"] else [])
            for kind, text in enumerate(pieces):
                if text:            # rejected and unused drafts hang below the axis
                    strip.append({"arm": names.get(arm, arm), "pass": i, "kind": kinds[kind], "order": kind,
                                  "count": -len(text) if kind >= 2 else len(text), "text": "".join(text)[:120]})
    if not strip:
        return alt.vconcat(top)
    frame = pd.DataFrame(strip)
    shown = [i for i, kind in enumerate(kinds) if kind in set(frame["kind"])]      # no legend for what is absent
    lanes = alt.Chart(frame).mark_bar().encode(
        x=alt.X("pass:O", title=label("lab_spec_pass_axis", lang), axis=alt.Axis(labelAngle=0, labelOverlap=True)),
        y=alt.Y("sum(count):Q", title=label("lab_spec_tokens_axis", lang), stack="zero"),
        color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=[kinds[i] for i in shown],
                                                     range=[(BLUE, ORANGE, GREY, PALE)[i] for i in shown]),
                        legend=alt.Legend(orient="bottom", columns=STACK_NARROW)),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("pass:O", title=label("lab_spec_pass_axis", lang)), alt.Tooltip("kind:N", title=" "),
                 alt.Tooltip("text:N", title=label("lab_spec_text", lang))],
    ).properties(width=520, height=120).facet(
        row=alt.Row("arm:N", title=None, sort=order, header=alt.Header(labelAngle=0, labelAlign="left",
                                                                        labelOrient="top", labelFontWeight="bold")),
        title=alt.Title(label("lab_spec_strip_title", lang), subtitle=label("lab_spec_strip_sub", lang).split("\n"))
    ).resolve_scale(x="independent")                  # each arm's own number of passes
    return alt.vconcat(top, lanes, spacing=24)


def speculative_table(result: dict, lang: str = "en") -> pd.DataFrame:
    part = section(result, "speculative", lang)
    yes, no = label("lab_spec_yes", lang), label("lab_spec_no", lang)
    return pd.DataFrame([{
        label("lab_spec_arm", lang): arm_name(r["arm"], lang, part.get("draft_model")),
        label("lab_spec_time", lang): _spread_ms(r["ms"]),
        label("lab_spec_tok_s", lang): f"{r['tokens_per_s']:.1f}",
        label("lab_spec_vs_plain", lang): _ratio(r.get("speedup")),
        label("lab_spec_passes", lang): f"{r['passes']} / {r['new_tokens']}",
        label("lab_spec_acceptance", lang): (
            f"{r['accepted']} / {r['accepted'] + r['rejected']} ({r['acceptance']:.0%})"
            if r.get("acceptance") is not None else "—"),
        label("lab_spec_identical", lang): yes if r["identical"] else no,
    } for r in part.get("rows", [])])


def speculative_summary(result: dict, lang: str = "en") -> str:
    part = section(result, "speculative", lang)
    rows = {r["arm"]: r for r in part.get("rows") or []}
    best = rows.get(part.get("best") or "")
    if "plain" not in rows or best is None:
        return label("lab_partial", lang)
    names = {arm: arm_name(arm, lang, part.get("draft_model")) for arm in rows}
    sentences = [serving_verdicts.speculative(part, lang, names),          # faster, slower or about the same: measured
                 label("lab_spec_same" if part.get("identical") else "lab_spec_differs", lang)]
    if part.get("draft_skipped"):
        sentences.append(label("lab_spec_no_draft", lang) if not part.get("draft_given") else part["draft_skipped"])
    return ("" if lang == "zh" else " ").join(sentences)


SUMMARIES = {"batching": batching_summary, "verify": verify_summary, "speculative": speculative_summary}
