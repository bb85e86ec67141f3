"""Chapter 7's columns as HTML: which kind of thinking, the thinking text (dimmed), the answer."""

from __future__ import annotations

from engine.schema.trace import Trace

from viz.fmt import esc
from viz.text.labels import label


def reasoning_html(trace: Trace | None, lang: str = "en") -> str:
    """One column: which kind of thinking, the thinking text (collapsible, dimmed), the answer."""
    if trace is None:
        return ""
    badge = label(f"thinking_{trace.reasoning}", lang) if trace.reasoning else label("mode_normal", lang)
    thinking = "".join(_span(s) for s in trace.steps if s.phase == "thinking")
    answer = "".join(_span(s) for s in trace.steps if s.phase == "answer")
    n_thinking = sum(s.phase == "thinking" for s in trace.steps)
    caret = '<span class="tbt-caret"></span>' if trace.summary is None else ""
    parts = [f'<div class="tbt-badge">{esc(badge)}</div>']
    if trace.reasoning:
        parts.append(f'<details class="tbt-thinking" open><summary>'
                     f'{esc(label("thinking_block", lang, n=n_thinking))}</summary>'
                     f'<div class="tbt-prose">{thinking}{caret if not answer else ""}</div></details>')
    if answer or not trace.reasoning:
        parts.append(f'<div class="tbt-answer"><div class="tbt-block-label">{esc(label("answer_block", lang))}'
                     f'</div><div class="tbt-prose">{answer}{caret}</div></div>')
    if not trace.steps and trace.summary is None:
        parts.append(f'<div class="tbt-note">{esc(label("waiting", lang))}</div>')
    if any(s.forced for s in trace.steps):
        parts.append(f'<div class="tbt-note">{esc(label("forced_note", lang))}</div>')
    return f'<div class="tbt tbt-reasoning">{"".join(parts)}</div>'


def _span(step) -> str:
    text = esc(step.text)
    return f'<span class="tbt-forced-text">{text}</span>' if step.forced else text
