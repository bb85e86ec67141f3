"""Decode-step charts: the top candidates, the logit lens, and the entropy of every step."""

from __future__ import annotations

import altair as alt
import pandas as pd

from engine.schema.trace import Trace

from viz import frames
from viz.fmt import fmt_p, visible
from viz.text.labels import label
from viz.charts.theme import BLUE, INK, MONO, ORANGE, STACK_NARROW

LENS_SAME, LENS_OTHER = "#f5b97f", "#c9d8f5"  # light tints so the guess text stays readable on them


def _how(trace: Trace, lang: str) -> str:
    s = trace.settings
    if trace.served:
        return label("how_served", lang, server=trace.served.endpoint)
    if s.temperature <= 0:
        return label("how_greedy", lang)
    return label("how_sampling", lang, t=s.temperature, k=s.top_k or label("surv_off", lang),
                 p=s.top_p if s.top_p < 1 else label("surv_off", lang))


def candidates_chart(trace: Trace, step: int, lang: str = "en", top: int | None = None) -> alt.LayerChart:
    """The stored top candidates of one step: probability before and after sampling transforms;
    only the `top` best (and the chosen one) where the chart has little room, as on a projector."""
    frame = frames.candidates_frame(trace, step, lang)
    if top is not None:
        frame = frame[(frame["rank"] < top) | frame["chosen"]]
    s = trace.steps[step]
    before, after = label("p_model_series", lang), label("p_final_series", lang)
    # one row per (candidate, distribution), so the two bars of a candidate sit side by side; a
    # server reports one distribution only
    served = trace.served is not None
    if served:
        before = after = label("p_served_series", lang)
    long = pd.concat([frame.assign(which=before, p=frame["p_model"])] +
                     ([] if served else [frame.assign(which=after, p=frame["p_final"])]), ignore_index=True)
    subtitle = [label("candidates_sub_served" if served else "candidates_sub", lang, how=_how(trace, lang))]
    if len(frame) > len(s.candidates) or frame["rank"].max() >= (top or len(s.candidates)):
        subtitle.append(label("candidates_outside", lang, n=min(top or len(s.candidates), len(s.candidates))))
    order = frame["label"].tolist()
    title = label("candidates_title_served" if served else "candidates_title", lang, step=step,
                  token=f"“{visible(s.token)}”", rank=s.chosen_rank + 1)
    base = alt.Chart(long).encode(
        y=alt.Y("label:N", sort=order, title=label("candidate", lang),
                axis=alt.Axis(labelFont=MONO, labelFontSize=13)),
        yOffset=alt.YOffset("which:N", sort=[before, after]),
        x=alt.X("p:Q", title=label("probability", lang), axis=alt.Axis(format="%")),
        color=alt.Color("which:N", title=label("distribution", lang),
                        scale=alt.Scale(domain=[before] if served else [before, after], range=[BLUE, ORANGE]),
                        legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        tooltip=[alt.Tooltip("text:N", title=label("token", lang)),
                 alt.Tooltip("id:Q", title=label("token_id", lang)),
                 alt.Tooltip("logit:Q", title=label("logit", lang), format=".2f"),
                 alt.Tooltip("p_model:Q", title=before, format=".2%"),
                 alt.Tooltip("p_final:Q", title=after, format=".2%")],
    )
    bars = base.mark_bar().encode(
        stroke=alt.condition("datum.chosen", alt.value(INK), alt.value(None)),
        strokeWidth=alt.condition("datum.chosen", alt.value(1.5), alt.value(0)))
    # "15.4% → 37.5%" after each candidate's longer bar
    values = frame.assign(p=frame[["p_model", "p_final"]].max(axis=1),
                          value=[fmt_p(a) if served else f"{fmt_p(a)} → {fmt_p(b)}"
                                 for a, b in zip(frame["p_model"], frame["p_final"])])
    text = alt.Chart(values).mark_text(align="left", dx=5, fontSize=13, color=INK).encode(
        y=alt.Y("label:N", sort=order), x="p:Q", text="value:N")
    return alt.layer(bars, text, title=alt.Title(title, subtitle=subtitle)).properties(
        width=520, height=alt.Step(15))


def lens_chart(trace: Trace, step: int, lang: str = "en") -> alt.LayerChart:
    """Logit lens: the top guess of every layer for this step, first layer at the top."""
    frame = frames.lens_frame(trace, step, lang)
    s = trace.steps[step]
    same, other = label("lens_same", lang), label("lens_other", lang)
    base = alt.Chart(frame, title=alt.Title(
        label("lens_title", lang, step=step, token=f"“{visible(s.token)}”"),
        subtitle=[label("lens_sub", lang)],
    )).encode(y=alt.Y("layer:O", title=label("layer_axis", lang)))
    bars = base.mark_bar().encode(
        x=alt.X("p:Q", title=label("probability", lang), axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("match:N", title=label("lens_kind", lang),
                        scale=alt.Scale(domain=[same, other], range=[LENS_SAME, LENS_OTHER]),
                        legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        tooltip=[alt.Tooltip("layer:O", title=label("layer", lang)),
                 alt.Tooltip("guess:N", title=label("lens_guess", lang)),
                 alt.Tooltip("id:Q", title=label("token_id", lang)),
                 alt.Tooltip("p:Q", title=label("probability", lang), format=".2%")])
    guesses = base.mark_text(align="left", dx=6, font=MONO, fontSize=13, color=INK).encode(
        x=alt.datum(0), text="guess:N")
    return alt.layer(bars, guesses).properties(width=460, height=alt.Step(20))


def entropy_chart(trace: Trace, lang: str = "en") -> alt.LayerChart:
    """Entropy of the model's distribution (and of the one sampled from) at every step."""
    steps = frames.steps_frame(trace)
    if steps.empty:
        raise ValueError(label("err_no_steps", lang))
    model, final = label("entropy_model", lang), label("entropy_final", lang)
    long = pd.concat([steps.assign(which=model, nats=steps["entropy_model"]),
                      steps.assign(which=final, nats=steps["entropy"])], ignore_index=True)
    base = alt.Chart(long, title=alt.Title(label("entropy_title", lang),
                                           subtitle=[label("entropy_sub", lang)])).encode(
        x=alt.X("step:Q", title=label("step_axis", lang),
                axis=alt.Axis(tickMinStep=1, format="d"), scale=alt.Scale(nice=False)),
        y=alt.Y("nats:Q", title=label("entropy_axis", lang)),
        color=alt.Color("which:N", title=label("distribution", lang),
                        scale=alt.Scale(domain=[model, final], range=[BLUE, ORANGE]),
                        legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        strokeDash=alt.StrokeDash("which:N", scale=alt.Scale(domain=[model, final],
                                                             range=[[1, 0], [5, 4]]), legend=None),
    )
    tooltip = [alt.Tooltip("step:Q", title=label("step", lang)),
               alt.Tooltip("token:N", title=label("token", lang)),
               alt.Tooltip("entropy_model:Q", title=model, format=".3f"),
               alt.Tooltip("entropy:Q", title=final, format=".3f"),
               alt.Tooltip("p_model:Q", title=label("p_model", lang), format=".2%")]
    return alt.layer(base.mark_line(strokeWidth=2.5),
                     base.mark_point(filled=True, size=60).encode(tooltip=tooltip),
                     ).properties(width=600, height=240)
