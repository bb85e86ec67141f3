"""A trace's branches as lineages: what each branch holds once its parents are followed. Pure
trace operations (no torch), so viz can draw the tree from them."""

from __future__ import annotations

import dataclasses
import math

from engine.errors import InvalidRequest
from engine.schema.trace import Branch, Step, Trace

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


def view(trace: Trace, branch_id: str) -> Trace:
    """The trace as the chapters draw it for one branch: the prompt and prefill of the run, the
    lineage's steps, the branch's settings and summary. Attention rows exist for the run's own
    steps only, so they end at the first step the branch does not share with the run."""
    if branch_id == ROOT:
        return trace
    branch, steps = find(trace, branch_id), lineage(trace, branch_id)
    shared = next((i for i, (a, b) in enumerate(zip(steps, trace.steps)) if a is not b),
                  min(len(steps), len(trace.steps)))
    attention = trace.attention
    if attention is not None:
        attention = dataclasses.replace(attention, steps=attention.steps[:shared],
                                        steps_capped_at=min(shared, attention.steps_capped_at or shared))
    return dataclasses.replace(trace, steps=steps, summary=branch.summary, attention=attention,
                               settings=branch.settings, branches=[])


def log_p(steps: list[Step]) -> float:
    """The lineage's cumulative log-probability under the model: the sum of each chosen token's
    log p (the model's own distribution, before sampling transforms)."""
    return sum(math.log(max(s.chosen_p_model, 1e-300)) for s in steps)
