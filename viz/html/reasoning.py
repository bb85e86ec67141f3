"""Chapter 7's columns as HTML: which kind of thinking, the thinking text (dimmed), the answer."""

from __future__ import annotations

from engine.schema.trace import Trace

from viz.fmt import esc
from viz.text.labels import label
from viz.text.pieces import group_text, grouped


def reasoning_html(trace: Trace | None, lang: str = "en") -> str:
    """One column: which kind of thinking, the thinking text (collapsible, dimmed), the answer."""
    if trace is None:
        return ""
    badge = label(f"thinking_{trace.reasoning}", lang) if trace.reasoning else label("mode_normal", lang)
    thinking = _prose([s for s in trace.steps if s.phase == "thinking"], lang)
    answer = _prose([s for s in trace.steps if s.phase == "answer"], lang)
    # the budget counts the thinking tokens the model chose, not the closing ones the engine inserts
    n_thinking = sum(s.phase == "thinking" and not s.forced for s in trace.steps)
    budget = trace.settings.thinking_budget
    caret = '<span class="tbt-caret"></span>' if trace.summary is None else ""
    parts = [f'<div class="tbt-badge">{esc(badge)}</div>']
    if trace.reasoning:
        parts.append(f'<details class="tbt-thinking" open><summary>'
                     f'{esc(label("thinking_block", lang, n=n_thinking, budget=budget))}</summary>'
                     f'<div class="tbt-prose">{thinking}{caret if not answer else ""}</div></details>')
    if answer or not trace.reasoning:
        parts.append(f'<div class="tbt-answer"><div class="tbt-block-label">{esc(label("answer_block", lang))}'
                     f'</div><div class="tbt-prose">{answer}{caret}</div></div>')
    if trace.summary is not None and trace.summary.stop_reason == "max_tokens":   # cut, not finished
        parts.append(f'<div class="tbt-note tbt-cut">{esc(label("answer_cut", lang, n=trace.settings.max_new_tokens))}</div>')
    if not trace.steps and trace.summary is None:
        parts.append(f'<div class="tbt-note">{esc(label("waiting", lang))}</div>')
    if any(s.forced for s in trace.steps):
        parts.append(f'<div class="tbt-note">{esc(label("forced_note", lang))}</div>')
    return f'<div class="tbt tbt-reasoning">{"".join(parts)}</div>'


def _prose(steps: list, lang: str) -> str:
    """The steps as prose: byte pieces grouped into their characters (a cut-off one as "…", never
    hex), the engine's inserted runs marked, and its answer cue in the page's language."""
    parts: list[tuple[bool, str]] = []        # (inserted by the engine, text), runs merged
    for group in grouped(steps):
        forced = all(st.forced for st in group)
        if parts and parts[-1][0] == forced:
            parts[-1] = (forced, parts[-1][1] + group_text(group))
        else:
            parts.append((forced, group_text(group)))
    return "".join(_run(text, lang) if forced else esc(text) for forced, text in parts)


def _run(text: str, lang: str) -> str:
    """An inserted run: the answer cue the engine writes (in English: it is what the model reads) is
    said in the page's language, the words the model read in its title."""
    shown = text
    if text.strip() == label("answer_cue", "en"):
        shown = text.replace(label("answer_cue", "en"), label("answer_cue", lang))
    title = label("forced", lang)
    return f'<span class="tbt-forced-text" title="{esc(title)}">{esc(shown)}</span>'
