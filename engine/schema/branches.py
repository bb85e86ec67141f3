"""A trace's branches as lineages: what each branch holds once its parents are followed. Pure
trace operations (no torch), so viz can draw the tree from them."""

from __future__ import annotations

import dataclasses
import math

from engine.errors import InvalidRequest
from engine.schema.packed import PackedRows
from engine.schema.trace import Attention, Branch, Settings, Step, Trace

MAX_BRANCHES = 64  # forks one trace may hold
ROOT = ""          # the parent id of a branch forked from the run itself


def lineage(trace: Trace, branch_id: str) -> list[Step]:
    """Every generated step along `branch_id` (ROOT: the run's own steps)."""
    if branch_id == ROOT:
        return list(trace.steps)
    branch = find(trace, branch_id)
    return lineage(trace, branch.parent)[: branch.at] + list(branch.steps)


def find(trace: Trace, branch_id: str) -> Branch:
    for b in trace.branches:
        if b.id == branch_id:
            return b
    raise InvalidRequest(f"this trace has no branch {branch_id!r}", "no_branch", branch=repr(branch_id))


def lineage_rows(trace: Trace, branch_id: str) -> tuple[list[PackedRows], int | None]:
    """The attention rows along `branch_id` (one per step from 0, as long as they go on without a
    gap) and the step from which the size cap stopped them (None: not the cap). A branch's chosen
    token shares its parent's row at `at` (the same pass produced both distributions)."""
    if trace.attention is None:
        return [], None
    if branch_id == ROOT:
        return list(trace.attention.steps), trace.attention.steps_capped_at
    branch = find(trace, branch_id)
    rows, capped = lineage_rows(trace, branch.parent)
    if len(rows) <= branch.at:              # the parent's rows end before the fork point
        return rows, capped if capped is not None and capped <= branch.at else None
    return rows[: branch.at + 1] + list(branch.attention), branch.attention_capped_at


def lineage_lens_cap(trace: Trace, branch_id: str) -> int | None:
    """The step from which the lineage's steps kept no lens states (size cap), or None."""
    if branch_id == ROOT:
        return trace.observation.lens_capped_at if trace.observation else None
    branch = find(trace, branch_id)
    capped = lineage_lens_cap(trace, branch.parent)
    return capped if capped is not None and capped <= branch.at else branch.lens_capped_at


def view(trace: Trace, branch_id: str) -> Trace:
    """The trace as the chapters draw it for one branch: the prompt and prefill of the run, the
    lineage's steps, attention rows and lens caps, the branch's settings and summary."""
    if branch_id == ROOT:
        return trace
    branch, steps = find(trace, branch_id), lineage(trace, branch_id)
    attention, observation = trace.attention, trace.observation
    if attention is not None:
        rows, capped = lineage_rows(trace, branch_id)
        attention = dataclasses.replace(attention, steps=rows, steps_capped_at=capped)
    if observation is not None:
        observation = dataclasses.replace(observation, lens_capped_at=lineage_lens_cap(trace, branch_id))
    return dataclasses.replace(trace, steps=steps, summary=branch.summary, attention=attention,
                               observation=observation, settings=branch.settings, branches=[])


def watched_rows(lineage_view: Trace, at: int, settings: Settings) -> Attention | None:
    """The attention a branch's view starts with: the lineage's rows up to and including step `at`
    (the chosen token's), which the branch's own rows continue; None when the branch keeps none."""
    a = lineage_view.attention
    if a is None or not settings.attention:
        return a if a is None else dataclasses.replace(a, steps=a.steps[:at + 1])
    capped = a.steps_capped_at if a.steps_capped_at is not None and a.steps_capped_at <= at else None
    return dataclasses.replace(a, steps=list(a.steps[:at + 1]), steps_capped_at=capped)


def log_p(steps: list[Step]) -> float:
    """The lineage's cumulative log-probability under the model: the sum of each chosen token's
    log p (the model's own distribution, before sampling transforms)."""
    return sum(math.log(max(s.chosen_p_model, 1e-300)) for s in steps)
