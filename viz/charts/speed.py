"""Speed charts: the timeline of one request, time per token, and TTFT against prompt length."""

from __future__ import annotations

import altair as alt
import pandas as pd

from engine.schema.trace import Trace

from viz import frames
from viz.fmt import fmt_ms, wrap_lines
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, ORANGE, PURPLE
from viz.text import verdicts


def _phase_scale(lang: str, thinking: bool = True, first: str | None = None) -> tuple[list[str], alt.Scale]:
    """Colours of the phases; "thinking" only in the legend of a run that thought. `first` names the
    wait before the first token (a served run's differs)."""
    names = [first or label("lane_prefill", lang), label("phase_answer", lang), label("phase_thinking", lang)]
    colours = [GREY, BLUE, PURPLE]
    if not thinking:
        names, colours = names[:2], colours[:2]
    return names, alt.Scale(domain=names, range=colours)


def _thought(trace: Trace) -> bool:
    return any(s.phase == "thinking" for s in trace.steps)


def _phase_names(steps: pd.DataFrame, lang: str) -> pd.Series:
    return steps["phase"].map(lambda p: label("phase_thinking" if p == "thinking" else "phase_answer",
                                              lang))


def timeline_chart(trace: Trace, lang: str = "en") -> alt.LayerChart:
    """A Gantt-like view on a ms axis from request start: one bar for tokenize + prefill ending at
    the first token (TTFT), then one bar per generated token ending when it was ready."""
    steps = frames.steps_frame(trace)
    if steps.empty:
        raise ValueError(label("err_no_steps", lang))
    ttft = float(steps["t_ms"].iloc[0])
    prefill_lane = label("lane_first_chunk" if trace.served else "lane_prefill", lang)
    tokens_lane = label("lane_tokens", lang)
    prefill = trace.prefill
    detail = (f"{label('tokenize_ms', lang)} {fmt_ms(prefill.tokenize_ms)} · "
              f"{label('forward_ms', lang)} {fmt_ms(prefill.ms)}") if prefill else ""
    bars = pd.concat([
        pd.DataFrame([{"lane": prefill_lane, "start_ms": 0.0, "t_ms": ttft, "ms": ttft, "step": "–",
                       "token": label("prefill_tokens", lang, n=len(trace.prompt.tokens)),
                       "detail": detail, "phase": prefill_lane}]),
        steps.assign(lane=tokens_lane, phase=_phase_names(steps, lang), step=steps["step"].astype(str),
                     detail=[f"{label('forward_ms', lang)} {fmt_ms(f)}" for f in steps["forward_ms"]]),
    ], ignore_index=True)[["lane", "start_ms", "t_ms", "ms", "step", "token", "detail", "phase"]]
    names, scale = _phase_scale(lang, _thought(trace), first=prefill_lane)
    x = alt.X("start_ms:Q", title=label("ms_axis", lang), scale=alt.Scale(nice=False),
              axis=alt.Axis(format="d", labelOverlap="greedy", labelSeparation=8))
    gantt = alt.Chart(bars).mark_bar(stroke="white", strokeWidth=1, height={"band": 0.7}).encode(
        x=x, x2="t_ms:Q",
        y=alt.Y("lane:N", sort=[prefill_lane, tokens_lane], title=None),
        color=alt.Color("phase:N", title=label("phase", lang), scale=scale,
                        legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("step:N", title=label("step", lang)),
                 alt.Tooltip("token:N", title=label("token", lang)),
                 alt.Tooltip("ms:Q", title=label("step_ms", lang), format=".1f"),
                 alt.Tooltip("t_ms:Q", title=label("ends_at", lang), format=".1f"),
                 alt.Tooltip("detail:N", title=" ")])
    mark = pd.DataFrame({"t_ms": [ttft], "text": [f"TTFT {fmt_ms(ttft)}"]})
    rule = alt.Chart(mark).mark_rule(color=ORANGE, strokeWidth=2, strokeDash=[4, 3]).encode(x="t_ms:Q")
    text = alt.Chart(mark).mark_text(align="left", dx=5, dy=6, baseline="top", color=INK,
                                     fontSize=13, fontWeight="bold").encode(
        x="t_ms:Q", y=alt.value(0), text="text:N")
    return alt.layer(gantt, rule, text, title=alt.Title(
        label("timeline_title", lang),
        subtitle=[label("timeline_sub_served" if trace.served else "timeline_sub", lang)],
    )).properties(width=720, height=140)


def step_times_chart(trace: Trace, lang: str = "en") -> alt.LayerChart:
    """Milliseconds per generated token (bars) and of its forward pass (dark ticks), by step."""
    steps = frames.steps_frame(trace)
    if steps.empty:
        raise ValueError(label("err_no_steps", lang))
    first = label("first_token", lang)
    steps = steps.assign(phase=_phase_names(steps, lang))
    steps.loc[0, "phase"] = first
    answer, thinking = label("phase_answer", lang), label("phase_thinking", lang)
    x = alt.X("step:O", title=label("step_axis", lang),
              axis=alt.Axis(labelAngle=0, labelOverlap="greedy"))
    tooltip = [alt.Tooltip("step:Q", title=label("step", lang)),
               alt.Tooltip("token:N", title=label("token", lang)),
               alt.Tooltip("ms:Q", title=label("step_ms", lang), format=".1f"),
               alt.Tooltip("forward_ms:Q", title=label("forward_ms", lang), format=".1f")]
    bars = alt.Chart(steps).mark_bar().encode(
        x=x, y=alt.Y("ms:Q", title=label("ms_per_token", lang)),
        color=alt.Color("phase:N", title=label("step_ms", lang), legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=[first, answer, thinking], range=[GREY, BLUE, PURPLE])
                        if _thought(trace) else alt.Scale(domain=[first, answer], range=[GREY, BLUE])),
        tooltip=tooltip)
    dots = alt.Chart(steps).mark_tick(color=INK, thickness=2).encode(
        x=x, y="forward_ms:Q", tooltip=tooltip)
    subtitle = ([label("step_times_sub_served", lang)] if trace.served else
                [label("step_times_sub", lang), label("forward_tick", lang)])
    return alt.layer(*([bars] if trace.served else [bars, dots]), title=alt.Title(
        label("step_times_title", lang), subtitle=subtitle,
    )).properties(width=alt.Step(18) if len(steps) > 30 else 600, height=260)


def ttft_vs_length_chart(rows: list[dict], lang: str = "en") -> alt.LayerChart:
    """TTFT (solid) and prefill forward time (dashed) against prompt length; rows with a `runs`
    key are told apart by colour (e.g. "cache on" / "cache off")."""
    frame = frames.rows_frame(rows, ("prompt_tokens", "ttft_ms", "prefill_ms"), lang)
    if "runs" not in frame.columns:
        frame["runs"] = label("measured", lang)
    ttft, prefill = label("ttft", lang), label("forward_ms", lang)
    long = pd.concat([frame.assign(measure=ttft, ms=frame["ttft_ms"]),
                      frame.assign(measure=prefill, ms=frame["prefill_ms"])], ignore_index=True)
    long = long.sort_values(["runs", "measure", "prompt_tokens"])
    runs = list(dict.fromkeys(frame["runs"]))
    base = alt.Chart(long).encode(
        x=alt.X("prompt_tokens:Q", title=label("prompt_tokens_axis", lang)),
        y=alt.Y("ms:Q", title=label("ms_per_token", lang)),
        color=alt.Color("runs:N", sort=runs, title=label("run", lang),
                        legend=alt.Legend(orient="top") if len(runs) > 1 else None),
        detail="measure:N",
    )
    # the dash legend is drawn with line symbols in the lines' colour (points would show as dots)
    dash = alt.StrokeDash("measure:N", title=label("measure", lang),
                          scale=alt.Scale(domain=[ttft, prefill], range=[[1, 0], [6, 4]]),
                          legend=alt.Legend(orient="top", symbolType="stroke", symbolStrokeWidth=2.5,
                                            symbolSize=400, symbolStrokeColor=BLUE if len(runs) == 1 else INK))
    tooltip = [alt.Tooltip("runs:N", title=label("run", lang)),
               alt.Tooltip("measure:N", title=label("measure", lang)),
               alt.Tooltip("prompt_tokens:Q", title=label("prompt_tokens_axis", lang)),
               alt.Tooltip("ms:Q", title=label("ms_per_token", lang), format=".1f")]
    return alt.layer(base.mark_line(strokeWidth=2.5).encode(strokeDash=dash),
                     base.mark_point(filled=True, size=60).encode(tooltip=tooltip),
                     title=alt.Title(label("ttft_len_title", lang),      # grew or not: read from the rows
                                     subtitle=wrap_lines(verdicts.ttft_by_length(rows, lang), 90)),
                     ).properties(width=560, height=300)
