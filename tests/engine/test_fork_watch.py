"""Issue 39 item 3: a branch keeps what its run watched. A run with attention and the logit lens
on forks into a branch whose every step has its attention row and its lens (the chosen token's are
the pass's that produced it), a branch of that branch too; the rows and lens travel in the file;
when a row is missing the notice names the real cause (a branch forked without attention, the size
cap), never "size cap" for rows that were simply not kept."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine import Settings, Trace, run_trace
from engine.model.lens import exported, with_step_lens
from engine.run.fork import run_fork
from engine.schema.branches import view
from engine.schema.validate import validate
from viz import frames
from viz.charts import attention, decode
from viz.text.labels import label

PROMPT = "什么是量子计算"


@pytest.fixture(scope="module")
def watched(engine):
    """A run with attention and the lens on, as the page runs it, forked at step 3, and that branch at step 6."""
    run = run_trace(engine, PROMPT, Settings(max_new_tokens=10, attention=True, logit_lens=True), keep_cache=True)
    other = next(c.id for c in run.steps[3].candidates if c.id != run.steps[3].id)
    tree = run_fork(engine, run, 3, other, max_new_tokens=5)
    b1 = tree.branches[-1].id
    shown = view(tree, b1)
    again = next(c.id for c in shown.steps[6].candidates if c.id != shown.steps[6].id)
    return run_fork(engine, tree, 6, again, parent=b1, max_new_tokens=3)


def second(step) -> int:
    return next(c.id for c in step.candidates if c.id != step.id)


@pytest.mark.parametrize("which", [0, 1])
def test_every_step_of_a_branch_has_its_attention_row_and_its_lens(engine, watched, which):
    branch = watched.branches[which]
    assert branch.settings.attention and branch.settings.logit_lens      # as the run watched
    assert len(branch.attention) == len(branch.steps) - 1
    shown = view(watched, branch.id)
    assert len(shown.attention.steps) == len(shown.steps) and shown.attention.steps_capped_at is None
    n_prompt = len(shown.prompt.tokens)
    for i, st in enumerate(shown.steps):
        rows = shown.attention.steps[i].unpack()
        assert rows.shape == (shown.model.layers, shown.model.heads, n_prompt + i)
        assert np.allclose(rows.sum(-1), 1, atol=1e-3)
        with_step_lens(engine, shown, i)
        assert st.lens is not None and len(st.lens) == shown.model.layers
        assert st.lens[-1].id == st.candidates[0].id          # the last layer's guess is the model's own
        attention.attention_row(shown, i, 0, None, lang="zh")   # drawn, not a notice (raises if it cannot be)
        decode.lens_chart(shown, i, lang="zh")


def test_the_chosen_token_shares_the_row_and_lens_of_the_pass_that_offered_it(watched):
    branch = watched.branches[0]
    source = watched.steps[branch.at]
    forced = branch.steps[0]
    assert forced.forced and forced.hidden is source.hidden
    shown = view(watched, branch.id)
    assert shown.attention.steps[branch.at] is watched.attention.steps[branch.at]


def test_the_branches_rows_and_lens_travel_in_the_file(engine, watched):
    back = validate(Trace.from_json(exported(engine, watched).to_json()), engine.limits)
    for b in back.branches:
        assert all(st.hidden is None and st.lens for st in b.steps)
        assert len(b.attention) == len(b.steps) - 1
    shown = view(back, back.branches[1].id)
    assert len(shown.attention.steps) == len(shown.steps)


def test_a_file_with_a_branch_row_of_the_wrong_shape_is_refused(engine, watched):
    b = watched.branches[0]
    bad = dataclasses.replace(watched, branches=[dataclasses.replace(b, attention=b.attention[1:] + b.attention[:1]),
                                                 *watched.branches[1:]])
    with pytest.raises(Exception, match="attention"):
        validate(Trace.from_json(bad.to_json()), engine.limits)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_branch_forked_without_attention_says_so_not_size_cap(engine, watched, lang):
    plain = dataclasses.replace(watched.branches[0].settings, attention=False, logit_lens=False)
    tree = run_fork(engine, watched, 2, second(watched.steps[2]), max_new_tokens=3, settings=plain)
    shown = view(tree, tree.branches[-1].id)
    assert tree.branches[-1].attention == [] and len(shown.attention.steps) == 3
    with pytest.raises(ValueError) as caught:
        frames.attention_row_frame(shown, 4, 0, None, lang)
    assert str(caught.value) == label("err_branch_no_rows", lang, count=3)
    assert str(caught.value) != label("err_rows_capped", lang, count=3)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_branch_on_show_has_its_own_speed_cards_and_status_line(watched, lang):
    """Issue 39 item 8: the cards and the status line describe the branch (its TTFT from the fork
    request, its speed, the prefix it reused), never the parent's prefill or first token."""
    from ui.chapters.run import branch_status_md, status_md
    from viz.fmt import fmt_ms
    from viz.html.branch_cards import branch_speed_figures, branch_speed_html
    branch = watched.branches[0]
    shown = view(watched, branch.id)
    cards, foot = branch_speed_figures(shown, branch, lang)
    named = {name: value for name, value, *_ in cards}
    assert named[label("ttft", lang)] == fmt_ms(branch.summary.ttft_ms)
    assert named[label("tpot", lang)] == fmt_ms(branch.summary.tpot_ms)
    assert label("prefill_ms", lang) not in named and label("branch_reused", lang) in named
    assert label("branch_reused_value", lang, n=f"{branch.reused_tokens:,}") == named[label("branch_reused", lang)]
    assert branch.id in foot and fmt_ms(watched.prefill.ms) not in branch_speed_html(shown, branch, lang)
    status = branch_status_md(shown, branch, lang)
    assert f"TTFT {branch.summary.ttft_ms:.0f} ms" in status and branch.id in status
    assert f"{watched.prefill.ms:.0f} ms" not in status.split("TTFT")[0]     # no parent prefill figure
    assert f"{len(branch.steps) - 1}/{branch.settings.max_new_tokens}" in status
    assert status != status_md(watched, lang)
    from viz.charts.speed import timeline_rows      # the timeline too: the branch's own clock, its own steps
    rows, ttft = timeline_rows(shown, lang, branch)
    assert list(rows["step"]) == [str(s.index) for s in branch.steps] and ttft == branch.summary.ttft_ms
    assert rows["t_ms"].iloc[0] == branch.steps[0].t_ms and rows["start_ms"].iloc[0] == 0.0
