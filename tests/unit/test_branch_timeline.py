"""Issue 39 item 8: a branch's Speed timeline and step times are on the branch's own clock (the copy
of the reused prefix, then its generated steps), never the parent's prefill or the parent's steps."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from engine.schema.branches import view
from engine.schema.trace import Branch
from tests.unit.test_viz_data import load
from ui.chapters.speed import speed_view
from viz.charts import speed
from viz.fmt import fmt_ms, wrap_lines
from viz.text.labels import label

AT, COPY_MS = 3, 1.75


def forked(name: str, rebuilt_ms: float | None = None):
    """The recorded run with one branch at step AT whose steps are re-timed on a clock that starts at
    the copy: the chosen token's bar is the copy, then each step's own ms."""
    trace = load(name)
    steps, clock = [], COPY_MS
    for i, s in enumerate(trace.steps[AT:AT + 6]):
        s = copy.deepcopy(s)
        ms = COPY_MS if i == 0 else s.ms
        clock = COPY_MS if i == 0 else round(clock + ms, 3)
        steps.append(dataclasses.replace(s, ms=ms, t_ms=clock, forced=i == 0))
    branch = Branch(id="b1", parent="", at=AT, token=steps[0].id, settings=trace.settings, steps=steps,
                    reused_tokens=len(trace.prompt.tokens) + AT, copy_ms=COPY_MS, rebuilt_ms=rebuilt_ms)
    trace.branches = [branch]
    return trace, branch


def subtitle(chart) -> list[str]:
    return list(chart.to_dict()["title"]["subtitle"])


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["trace_zh.json", "trace_en_sampled.json"])
def test_a_branch_timeline_holds_only_its_own_steps_on_its_own_clock(name, lang):
    trace, branch = forked(name)
    rows, ttft = speed.timeline_rows(view(trace, "b1"), lang, branch)
    assert list(rows["step"]) == [str(s.index) for s in branch.steps]          # no parent step, no prefill bar
    assert rows["lane"].iloc[0] == label("lane_copy", lang)
    assert label("lane_prefill", lang) not in set(rows["lane"])
    assert rows["start_ms"].iloc[0] == 0.0 and rows["t_ms"].iloc[0] == COPY_MS
    assert list(rows["start_ms"].iloc[1:]) == pytest.approx(list(rows["t_ms"].iloc[:-1]), abs=1e-3)   # one clock, chained
    assert ttft == branch.steps[1].t_ms
    assert trace.prefill.ms + trace.prefill.tokenize_ms > 0 and rows["t_ms"].max() == branch.steps[-1].t_ms


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_run_timeline_still_starts_with_its_prefill(lang):
    trace, _ = forked("trace_zh.json")
    rows, ttft = speed.timeline_rows(trace, lang)
    assert rows["lane"].iloc[0] == label("lane_prefill", lang) and rows["step"].iloc[0] == "–"
    assert list(rows["step"].iloc[1:]) == [str(s.index) for s in trace.steps]
    assert ttft == trace.steps[0].t_ms


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_branch_charts_say_which_part_is_the_parents(lang):
    trace, branch = forked("trace_zh.json", rebuilt_ms=812.5)
    cards, timeline, step_times = speed_view(view(trace, "b1"), lang, branch)
    said = speed.branch_subtitle(branch, lang)
    assert said[0] == label("timeline_sub_branch", lang, id="b1", at=AT, last=AT - 1, n=f"{branch.reused_tokens:,}")
    assert said[1] == label("timeline_sub_rebuilt", lang, ms=fmt_ms(812.5))
    assert subtitle(timeline) == wrap_lines(said, 110)                   # wrapped to the chart's width
    assert subtitle(step_times)[:len(wrap_lines(said, 90))] == wrap_lines(said, 90)
    data = step_times.to_dict()["datasets"]
    rows = next(iter(data.values()))
    assert [r["step"] for r in rows] == [s.index for s in branch.steps]
    assert rows[0]["phase"] == label("lane_copy", lang) and rows[1]["phase"] == label("first_token", lang)


def test_a_branch_of_the_first_step_names_only_the_prompt():
    trace, branch = forked("trace_en_sampled.json")
    branch.at = 0
    assert speed.branch_subtitle(branch, "en") == [label("timeline_sub_branch0", "en", id="b1", at=0, last=-1,
                                                         n=f"{branch.reused_tokens:,}")]


def test_a_branch_that_generated_nothing_has_no_ttft_mark():
    trace, branch = forked("trace_zh.json")
    branch.steps = branch.steps[:1]
    rows, ttft = speed.timeline_rows(view(trace, "b1"), "en", branch)
    assert ttft is None and len(rows) == 1
    assert len(speed.timeline_chart(view(trace, "b1"), "en", branch).to_dict()["layer"]) == 1
