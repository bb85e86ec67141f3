"""The branch tree: the run and each branch forked from it, one row each, token by token.

A grid with one column per generated position, so a branch starts under the step it replaced and
its tokens line up with its parent's. Each token is coloured by the probability the model gave it
(as in the answer), the chosen token of a fork is outlined, and each row ends with its cumulative
log-probability. A click on a row shows that branch in the chapters (`data-index`: 0 is the run,
i is the i-th branch).
"""

from __future__ import annotations

from engine.schema.branches import ROOT, lineage, log_p
from engine.schema.trace import Trace

from viz.html.chips import chip_text, p_colour
from viz.fmt import esc, fmt_p
from viz.text.labels import label


def _name(branch_id: str, lang: str) -> str:
    return label("tree_run", lang) if branch_id == ROOT else branch_id


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
        for pos in range(start, len(steps)):
            st = steps[pos]
            fork = " tbt-tree-fork" if row != ROOT and pos == start else ""
            title = "\n".join([st.token, label("tree_node", lang, step=pos, p=fmt_p(st.chosen_p_model))])
            cells.append(f'<span class="tbt-step tbt-tree-node{fork}" data-index="{index}" title="{esc(title)}" '
                         f'style="grid-row:{index + 1};grid-column:{pos + 2};background:{p_colour(st.chosen_p_model)}">'
                         f'{chip_text(st.token if st.text == "" else st.text)}</span>')
        cells.append(f'<span class="tbt-tree-logp{selected}" data-index="{index}" '
                     f'style="grid-row:{index + 1};grid-column:{width + 2}">'
                     f'{esc(label("tree_logp", lang, value=f"{log_p(steps):.2f}"))}</span>')
    legend = esc(label("tree_legend", lang))
    return (f'<div class="tbt tbt-tree-wrap"><div class="tbt-tree" '
            f'style="grid-template-columns:auto repeat({width}, max-content) auto">{"".join(cells)}</div>'
            f'<div class="tbt-legend">{legend}</div></div>')
