"""Chapter 7: normal vs reasoning side by side, and accuracy against thinking budget."""

from __future__ import annotations

import altair as alt
import pandas as pd

from engine.schema.specs import short_name
from engine.schema.trace import Trace

from viz.fmt import fmt_ms, fmt_rate, wrap_lines
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, ORANGE, PURPLE, STACK_NARROW, when_narrow
from viz.text import verdicts


def comparison_table(normal: Trace, reasoning: Trace, lang: str = "en") -> pd.DataFrame:
    """The measured figures of both runs, one row per measure."""
    def figures(t: Trace) -> list[str]:
        s = t.summary
        if s is None:
            return ["…"] * 7
        return [fmt_ms(s.ttft_ms), fmt_ms(s.time_to_first_answer_ms), str(s.thinking_tokens),
                str(s.answer_tokens), str(s.new_tokens), fmt_ms(s.e2e_ms), fmt_rate(s.tokens_per_s, lang)]
    rows = ["row_ttft", "row_ttfa", "row_thinking", "row_answer", "row_total", "row_e2e", "row_rate"]
    return pd.DataFrame({label("r_measure", lang): [label(r, lang) for r in rows],
                         label("mode_normal", lang): figures(normal),
                         label("mode_reasoning", lang): figures(reasoning)})


def compare_timeline(normal: Trace, reasoning: Trace, lang: str = "en") -> alt.LayerChart:
    """Both runs on one ms axis: a prefill bar, then one bar per token coloured by phase."""
    names = {"prefill": label("lane_prefill", lang), "thinking": label("phase_thinking", lang),
             "answer": label("phase_answer", lang)}
    rows, marks = [], []
    for mode, trace in (("mode_normal", normal), ("mode_reasoning", reasoning)):
        lane = label(mode, lang)
        steps = trace.steps
        if steps:
            rows.append({"lane": lane, "start": 0.0, "end": steps[0].t_ms,
                         "phase": names["prefill"], "token": "", "step": "–"})
        for s in steps[1:]:
            rows.append({"lane": lane, "start": s.t_ms - s.ms, "end": s.t_ms, "phase": names[s.phase],
                         "token": s.token, "step": str(s.index)})
        first = trace.summary.time_to_first_answer_ms if trace.summary else None
        if first is not None:
            marks.append({"lane": lane, "t": first, "text": f"{label('first_answer', lang)} {fmt_ms(first)}"})
    if not rows:
        raise ValueError(label("err_no_steps", lang))
    scale = alt.Scale(domain=list(names.values()), range=[GREY, PURPLE, BLUE])
    lanes = [label("mode_normal", lang), label("mode_reasoning", lang)]
    y = alt.Y("lane:N", sort=lanes, title=None)
    # bars fill the lower half of each lane; the "first answer token" label sits in the upper half
    bars = alt.Chart(pd.DataFrame(rows)).mark_bar(height={"band": 0.45}, yOffset=6).encode(
        # a phone's column has room for fewer labels (they ran together: "10001500 20002500")
        x=alt.X("start:Q", title=label("ms_axis", lang),
                axis=alt.Axis(format="d", labelOverlap=True, tickCount=when_narrow(4, 8))), x2="end:Q", y=y,
        color=alt.Color("phase:N", scale=scale, title=label("phase", lang), legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        tooltip=[alt.Tooltip("step:N", title=label("step", lang)), alt.Tooltip("token:N", title=label("token", lang)),
                 alt.Tooltip("end:Q", title=label("ends_at", lang), format=".0f")])
    layers = [bars]
    if marks:
        frame = pd.DataFrame(marks)
        layers.append(alt.Chart(frame).mark_tick(color=ORANGE, thickness=3, size=26, yOffset=6).encode(
            x="t:Q", y=y))
        layers.append(alt.Chart(frame).mark_text(align="left", baseline="top", dx=6, color=INK, fontSize=13).encode(
            x="t:Q", y=alt.Y("lane:N", sort=lanes, title=None, bandPosition=0.05), text="text:N"))
    return alt.layer(*layers, title=alt.Title(label("compare_title", lang),
                                              subtitle=[label("compare_sub", lang)])).properties(width=720, height=150)


def eval_reading(result: dict, lang: str = "en") -> list[str]:
    """What the numbers support, and no more: whether the best and worst budgets' 95 % intervals
    overlap, and how many runs never answered."""
    rows = result.get("budgets") or []
    lines = [verdicts.eval_budgets(result, lang)] if len(rows) > 1 else []
    unanswered = sum(r.get("never_answered", 0) for r in rows)
    if unanswered:
        lines.append(label("eval_unanswered", lang, k=unanswered))
    return lines


def eval_chart(result: dict, lang: str = "en") -> alt.HConcatChart:
    """Accuracy (with its 95 % Wilson interval) and mean times against the thinking budget, from
    `engine.bench.evaluation.evaluate`; the subtitle says only what the intervals support."""
    rows = result.get("budgets") or []
    if not rows:
        raise ValueError(label("err_no_steps", lang))
    frame = pd.DataFrame(rows)
    frame["budget_label"] = frame["budget"].astype(str)
    frame["ci_low"] = [c[0] for c in frame["ci95"]]
    frame["ci_high"] = [c[1] for c in frame["ci95"]]
    frame = frame.drop(columns=["ci95"])
    order = frame["budget_label"].tolist()
    sub = label("eval_sub", lang, model=short_name(result.get("model", "")), n=int(frame["questions"].max()))
    x = alt.X("budget_label:N", sort=order, title=label("budget_axis", lang), axis=alt.Axis(labelAngle=0))
    tooltip = ["budget:Q", "correct:Q", "questions:Q", alt.Tooltip("accuracy:Q", format=".0%"),
               alt.Tooltip("ci_low:Q", format=".0%", title=label("ci_low", lang)),
               alt.Tooltip("ci_high:Q", format=".0%", title=label("ci_high", lang))]
    base = alt.Chart(frame)
    bars = base.mark_bar(color=PURPLE).encode(
        x=x, y=alt.Y("accuracy:Q", title=label("accuracy", lang), scale=alt.Scale(domain=[0, 1]),
                     axis=alt.Axis(format="%")), tooltip=tooltip)
    interval = base.mark_rule(color=INK, strokeWidth=2).encode(
        x=x, y=alt.Y("ci_low:Q", title=label("accuracy", lang)), y2="ci_high:Q", tooltip=tooltip)
    ends = [base.mark_tick(color=INK, size=18, thickness=2).encode(x=x, y=f"{end}:Q", tooltip=tooltip)
            for end in ("ci_low", "ci_high")]
    accuracy = alt.layer(bars, interval, *ends, title=alt.Title(label("eval_accuracy_title", lang),
                                                         subtitle=wrap_lines([sub, *eval_reading(result, lang)], 58)))
    times = frame.melt(id_vars=["budget_label"], value_vars=["mean_e2e_ms", "mean_time_to_first_answer_ms"],
                       var_name="measure", value_name="ms").dropna(subset=["ms"])
    times["measure"] = times["measure"].map({"mean_e2e_ms": label("mean_e2e", lang),
                                             "mean_time_to_first_answer_ms": label("mean_ttfa", lang)})
    times["s"] = times["ms"] / 1000
    time_chart = alt.Chart(times, title=alt.Title(label("eval_time_title", lang))).mark_line(point=True).encode(
        x=x, y=alt.Y("s:Q", title=label("seconds", lang)),
        color=alt.Color("measure:N", title=None,     # same colour for the same measure in every language
                        scale=alt.Scale(domain=[label("mean_e2e", lang), label("mean_ttfa", lang)],
                                        range=[BLUE, ORANGE]),
                        legend=alt.Legend(orient="bottom", columns=STACK_NARROW)),
        tooltip=["measure:N", alt.Tooltip("s:Q", format=".2f")])
    # each legend stays with its own chart (a concat otherwise floats it over the first one)
    return alt.hconcat(accuracy.properties(width=320, height=240),
                       time_chart.properties(width=320, height=240)).resolve_legend(color="independent")


def eval_table(result: dict, lang: str = "en") -> pd.DataFrame:
    return pd.DataFrame([{label("col_budget", lang): r["budget"],
                          label("col_correct", lang): f'{r["correct"]}/{r["questions"]}',
                          label("col_accuracy", lang): f'{r["accuracy"]:.0%}',
                          label("col_ci95", lang): f'{r["ci95"][0]:.0%}–{r["ci95"][1]:.0%}',
                          label("col_answered", lang): f'{r["answered"]}/{r["questions"]}',
                          label("col_mean_e2e", lang): fmt_ms(r["mean_e2e_ms"]),
                          label("col_mean_ttfa", lang): fmt_ms(r["mean_time_to_first_answer_ms"]),
                          label("col_mean_thinking", lang): f'{r["mean_thinking_tokens"]:.0f}'}
                         for r in result.get("budgets", [])])
