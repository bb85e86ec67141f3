"""Speed charts: the timeline of one request, time per token, and TTFT against prompt length."""

from __future__ import annotations

import dataclasses

import altair as alt
import pandas as pd

from engine.schema.trace import Branch, Trace

from viz import frames
from viz.fmt import fmt_ms, visible, wrap_lines
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, ORANGE, PURPLE, STACK_NARROW
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


def timeline_rows(trace: Trace, lang: str = "en", branch: Branch | None = None) -> tuple[pd.DataFrame, float | None]:
    """The timeline's bars (lane, start_ms, t_ms, ms, step, token, detail, phase) and the TTFT they mark.
    A run: tokenize + prefill ending at the first token, then one bar per generated token. A branch on
    show: its own clock only, which starts with copying the reused prefix (the chosen token's bar), then
    its generated steps; the lineage's steps before the fork are the parent's, on the parent's clock,
    and are not among the rows (the subtitle says so)."""
    if branch is not None:
        return _branch_rows(branch, lang)
    steps = frames.steps_frame(trace)
    if steps.empty:
        raise ValueError(label("err_no_steps", lang))
    ttft = float(steps["t_ms"].iloc[0])
    prefill_lane = label("lane_first_chunk" if trace.served else "lane_prefill", lang)
    prefill = trace.prefill
    detail = (f"{label('tokenize_ms', lang)} {fmt_ms(prefill.tokenize_ms)} · "
              f"{label('forward_ms', lang)} {fmt_ms(prefill.ms)}") if prefill else ""
    first = pd.DataFrame([{"lane": prefill_lane, "start_ms": 0.0, "t_ms": ttft, "ms": ttft, "step": "–",
                           "token": label("prefill_tokens", lang, n=len(trace.prompt.tokens)),
                           "detail": detail, "phase": prefill_lane}])
    return pd.concat([first, _token_bars(steps, lang)], ignore_index=True)[_COLUMNS], ttft


_COLUMNS = ["lane", "start_ms", "t_ms", "ms", "step", "token", "detail", "phase"]


def _token_bars(steps: pd.DataFrame, lang: str) -> pd.DataFrame:
    return steps.assign(lane=label("lane_tokens", lang), phase=_phase_names(steps, lang),
                        step=steps["step"].astype(str),
                        detail=[f"{label('forward_ms', lang)} {fmt_ms(f)}" for f in steps["forward_ms"]])


def _branch_rows(branch: Branch, lang: str) -> tuple[pd.DataFrame, float | None]:
    if not branch.steps:
        raise ValueError(label("err_no_steps", lang))
    chosen, own = branch.steps[0], branch.steps[1:]
    copy_lane = label("lane_copy", lang)
    first = pd.DataFrame([{"lane": copy_lane, "start_ms": chosen.t_ms - chosen.ms, "t_ms": chosen.t_ms,
                           "ms": chosen.ms, "step": str(chosen.index), "token": visible(chosen.token),
                           "detail": label("copy_detail", lang, n=f"{branch.reused_tokens:,}"),
                           "phase": copy_lane}])
    bars = [first]
    if own:
        steps = pd.DataFrame([{"step": s.index, "token": visible(s.token), "ms": s.ms, "t_ms": s.t_ms,
                               "start_ms": s.t_ms - s.ms, "forward_ms": s.forward_ms, "phase": s.phase}
                              for s in own])
        bars.append(_token_bars(steps, lang))
    return pd.concat(bars, ignore_index=True)[_COLUMNS], (float(own[0].t_ms) if own else None)


def branch_subtitle(branch: Branch, lang: str = "en") -> list[str]:
    """What the branch's timeline shows and what it leaves to the parent (the shared prefix)."""
    n = f"{branch.reused_tokens:,}"
    lines = [label("timeline_sub_branch" if branch.at else "timeline_sub_branch0", lang, id=branch.id,
                   at=branch.at, last=branch.at - 1, n=n)]
    if branch.rebuilt_ms is not None:
        lines.append(label("timeline_sub_rebuilt", lang, ms=fmt_ms(branch.rebuilt_ms)))
    return lines


def timeline_chart(trace: Trace, lang: str = "en", branch: Branch | None = None) -> alt.LayerChart:
    """A Gantt-like view on a ms axis from request start (a branch: from its fork's copy): the bars of
    `timeline_rows`, and a dashed rule at the first generated token (TTFT)."""
    bars, ttft = timeline_rows(trace, lang, branch)
    first_lane, tokens_lane = str(bars["lane"].iloc[0]), label("lane_tokens", lang)
    thought = _thought(trace) if branch is None else any(s.phase == "thinking" for s in branch.steps)
    names, scale = _phase_scale(lang, thought, first=first_lane)
    x = alt.X("start_ms:Q", title=label("ms_axis_branch" if branch else "ms_axis", lang),
              scale=alt.Scale(nice=False), axis=alt.Axis(format="d", labelOverlap="greedy", labelSeparation=8))
    gantt = alt.Chart(bars).mark_bar(stroke="white", strokeWidth=1, height={"band": 0.7}).encode(
        x=x, x2="t_ms:Q",
        y=alt.Y("lane:N", sort=[first_lane, tokens_lane], title=None),
        color=alt.Color("phase:N", title=label("phase", lang), scale=scale,
                        legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        tooltip=[alt.Tooltip("step:N", title=label("step", lang)),
                 alt.Tooltip("token:N", title=label("token", lang)),
                 alt.Tooltip("ms:Q", title=label("step_ms", lang), format=".1f"),
                 alt.Tooltip("t_ms:Q", title=label("ends_at", lang), format=".1f"),
                 alt.Tooltip("detail:N", title=" ")])
    layers = [gantt]
    if ttft is not None:
        mark = pd.DataFrame({"t_ms": [ttft], "text": [f"TTFT {fmt_ms(ttft)}"]})
        layers.append(alt.Chart(mark).mark_rule(color=ORANGE, strokeWidth=2, strokeDash=[4, 3]).encode(x="t_ms:Q"))
        layers.append(alt.Chart(mark).mark_text(align="left", dx=5, dy=6, baseline="top", color=INK,
                                                fontSize=13, fontWeight="bold").encode(
            x="t_ms:Q", y=alt.value(0), text="text:N"))
    subtitle = (wrap_lines(branch_subtitle(branch, lang), 110) if branch is not None else
                [label("timeline_sub_served" if trace.served else "timeline_sub", lang)])
    return alt.layer(*layers, title=alt.Title(label("timeline_title", lang), subtitle=subtitle,
                                              )).properties(width=720, height=140)


def step_times_chart(trace: Trace, lang: str = "en", branch: Branch | None = None) -> alt.LayerChart:
    """Milliseconds per generated token (bars) and of its forward pass (dark ticks), by step. A branch on
    show: its own steps only (the chosen token's bar is the copy of the reused prefix)."""
    own = trace if branch is None else dataclasses.replace(trace, steps=list(branch.steps))
    steps = frames.steps_frame(own)
    if steps.empty:
        raise ValueError(label("err_no_steps", lang))
    first = label("first_token", lang)
    steps = steps.assign(phase=_phase_names(steps, lang))
    copy = [label("lane_copy", lang)] if branch is not None else []
    steps.loc[0, "phase"] = copy[0] if copy else first
    if copy and len(steps) > 1:
        steps.loc[1, "phase"] = first
    answer, thinking = label("phase_answer", lang), label("phase_thinking", lang)
    x = alt.X("step:O", title=label("step_axis", lang),
              axis=alt.Axis(labelAngle=0, labelOverlap="greedy"))
    tooltip = [alt.Tooltip("step:Q", title=label("step", lang)),
               alt.Tooltip("token:N", title=label("token", lang)),
               alt.Tooltip("ms:Q", title=label("step_ms", lang), format=".1f"),
               alt.Tooltip("forward_ms:Q", title=label("forward_ms", lang), format=".1f")]
    bars = alt.Chart(steps).mark_bar().encode(
        x=x, y=alt.Y("ms:Q", title=label("ms_per_token", lang)),
        color=alt.Color("phase:N", title=label("step_ms", lang), legend=alt.Legend(orient="top", columns=STACK_NARROW),
                        scale=alt.Scale(domain=[*copy, first, answer, thinking], range=[*[ORANGE] * len(copy), GREY, BLUE, PURPLE])
                        if _thought(own) else alt.Scale(domain=[*copy, first, answer], range=[*[ORANGE] * len(copy), GREY, BLUE])),
        tooltip=tooltip)
    dots = alt.Chart(steps).mark_tick(color=INK, thickness=2).encode(
        x=x, y="forward_ms:Q", tooltip=tooltip)
    subtitle = ([label("step_times_sub_served", lang)] if trace.served else
                [label("step_times_sub", lang), label("forward_tick", lang)])
    if branch is not None:
        subtitle = wrap_lines(branch_subtitle(branch, lang), 90) + subtitle[1:]
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
                        legend=alt.Legend(orient="top", columns=STACK_NARROW) if len(runs) > 1 else None),
        detail="measure:N",
    )
    # the dash legend is drawn with line symbols in the lines' colour (points would show as dots)
    dash = alt.StrokeDash("measure:N", title=label("measure", lang),
                          scale=alt.Scale(domain=[ttft, prefill], range=[[1, 0], [6, 4]]),
                          legend=alt.Legend(orient="top", columns=STACK_NARROW, symbolType="stroke", symbolStrokeWidth=2.5,
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
