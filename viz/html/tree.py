"""The branch tree: the run and each branch forked from it, one row each, token by token.

A grid with one column per generated position, so a branch starts under the step it replaced and
its tokens line up with its parent's. Each token is coloured by the probability the model gave it
(as in the answer), the chosen token of a fork is outlined, and each row ends with its cumulative
log-probability. A click on a row shows that branch in the chapters (`data-index`: 0 is the run,
i is the i-th branch).
"""

from __future__ import annotations

import math

from engine.schema.branches import ROOT, lineage, log_p
from engine.schema.trace import Trace

from viz.html.chips import chip_text, p_colour
from viz.fmt import esc, fmt_p
from viz.text.labels import label
from viz.text.pieces import group_text, grouped


def _name(branch_id: str, lang: str) -> str:
    return label("tree_run", lang) if branch_id == ROOT else branch_id


def _cell(group: list, index: int, pos: int, fork: bool, lang: str) -> str:
    """One cell of a row: a step, or the byte pieces of one character with the step completing it
    (spanning their columns, coloured by the probability of them all; the pieces on hover)."""
    p = math.prod(st.chosen_p_model for st in group)
    title = "\n".join([*(st.token for st in group), label("tree_node", lang, step=pos, p=fmt_p(p))])
    span = f"{pos + 2} / span {len(group)}"
    return (f'<span class="tbt-step tbt-tree-node{" tbt-tree-fork" if fork else ""}" data-index="{index}" '
            f'title="{esc(title)}" style="grid-row:{index + 1};grid-column:{span};background:{p_colour(p)}">'
            f'{chip_text(group_text(group))}</span>')


def tree_html(trace: Trace, shown: str = ROOT, lang: str = "en") -> str:
    rows = [ROOT] + [b.id for b in trace.branches]
    starts = {ROOT: 0, **{b.id: b.at for b in trace.branches}}
    parents = {b.id: b.parent for b in trace.branches}
    lines = {r: lineage(trace, r) for r in rows}
    width = max((len(steps) for steps in lines.values()), default=0)
    cells = []
    for index, row in enumerate(rows):
        steps, start = lines[row], starts[row]
        if row == ROOT:
            head = label("tree_generated", lang)
        elif parents[row] == ROOT:
            head = label("tree_from_run", lang, step=start)
        else:
            head = label("tree_from", lang, parent=parents[row], step=start)
        selected = " tbt-tree-shown" if row == shown else ""
        cells.append(f'<div class="tbt-tree-label{selected}" data-index="{index}" style="grid-row:{index + 1}">'
                     f'<b>{esc(_name(row, lang))}</b> <span class="tbt-muted">{esc(head)}</span></div>')
        pos = start
        for group in grouped(steps[start:]):       # byte pieces with the character they form, one cell
            cells.append(_cell(group, index, pos, fork=row != ROOT and pos == start, lang=lang))
            pos += len(group)
        cells.append(f'<span class="tbt-tree-logp{selected}" data-index="{index}" '
                     f'style="grid-row:{index + 1};grid-column:{width + 2}">'
                     f'{esc(label("tree_logp", lang, value=f"{log_p(steps):.2f}"))}</span>')
    legend = esc(label("tree_legend", lang))
    return (f'<div class="tbt tbt-tree-wrap"><div class="tbt-tree" '
            f'style="grid-template-columns:auto repeat({width}, max-content) auto">{"".join(cells)}</div>'
            f'<div class="tbt-legend">{legend}</div></div>')
