"""The speed cards of a branch on show: its own figures (TTFT from the fork request, TPOT, speed) and,
in the prefill's place, the prefix it reused from the run's KV cache (no prefill of its own ran).
The lineage's steps before the fork point are the parent's, timed on the parent's clock: they are
left out, so no card mixes the two runs."""

from __future__ import annotations

import dataclasses

from engine.schema.trace import Branch, Trace

from viz.fmt import esc, fmt_ms
from viz.html.cards import _card, cards_grid, speed_figures
from viz.text.labels import label


def branch_speed_figures(trace: Trace, branch: Branch, lang: str = "en",
                         compact: bool = False) -> tuple[list[tuple[str, str, str, str]], str]:
    """(name, value, definition, note) of each card, and the line under them, for `branch` (the view
    `trace` draws it in gives the prompt and the model)."""
    own = dataclasses.replace(trace, steps=list(branch.steps), summary=branch.summary, reasoning=None)
    cards, foot = speed_figures(own, lang, compact=False)
    prefill = {label("prefill_ms", lang), label("prefill_rate", lang)}
    cards = [c for c in cards if c[0] not in prefill]
    name, value, _, note = cards[0]
    cards[0] = (name, value, label("def_ttft_branch", lang), note)
    rebuilt = label("branch_rebuilt", lang, ms=fmt_ms(branch.rebuilt_ms)) if branch.rebuilt_ms is not None else ""
    cards.insert(4, (label("branch_reused", lang), label("branch_reused_value", lang, n=f"{branch.reused_tokens:,}"),
                     label("def_branch_reused", lang, copy=fmt_ms(branch.copy_ms)), rebuilt))
    head = label("branch_cards_foot", lang, id=branch.id, step=branch.at)
    return (cards[:4] if compact else cards), f"{head} · {foot}"


def branch_speed_html(trace: Trace, branch: Branch, lang: str = "en", compact: bool = False) -> str:
    figures, foot = branch_speed_figures(trace, branch, lang, compact)
    cards = [_card(*f) for f in figures]
    return f'<div class="tbt tbt-speed">{cards_grid(cards, compact)}<div class="tbt-legend">{esc(foot)}</div></div>'
