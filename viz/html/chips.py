"""Token chips as HTML: the prompt, a two-tokenizer comparison, and the streaming output.

Every string that came from a trace is escaped with `esc` (html.escape, quote=True) before it
touches the page, in text and in attributes alike: a prompt may hold `<script>` or `onerror=`.
Styles live in `viz.html.css.CSS`; the only inline style is a colour picked from a fixed palette.
"""

from __future__ import annotations

import math

from engine.schema.trace import STOP_REASONS, PromptToken, Step, Trace

from viz.fmt import HEX_FRAGMENT, WHITESPACE_SIGNS, esc, fmt_p, visible
from viz.text.labels import label
from viz.text.pieces import byte_groups, grouped, is_piece

PALETTE = ("#fde2b3", "#c9e4ff", "#d4f1d0", "#f9d0e0", "#e3d7fb",
           "#fff1a8", "#cdeff0", "#ffd8c2", "#dfe8c4", "#eadfd0")
BREAK = '<span class="tbt-break"></span>'  # a flex line break after tokens that end a line


def chip_text(text: str) -> str:
    """Escaped token text with whitespace drawn as faint signs (␣ ↵ ⇥); hex fragments as they are."""
    if text == "":
        return '<span class="tbt-ws">∅</span>'
    if HEX_FRAGMENT.fullmatch(text):
        return esc(text)
    return "".join(f'<span class="tbt-ws">{WHITESPACE_SIGNS[ch]}</span>' if ch in WHITESPACE_SIGNS
                   else esc(visible(ch)) for ch in text)


def token_groups(tokens: list[PromptToken]) -> list[tuple[list[int], list[int]]]:
    """(token indices, character indices) of each group the one rule forms (viz/text/pieces.py:
    byte_groups, the same as the answer's steps): byte pieces join the token that completes their
    character; a group's characters are those its tokens' spans touch."""
    groups = byte_groups([bytes.fromhex(t.bytes_hex) for t in tokens])
    return [(members, sorted({c for i in members for c in range(tokens[i].start, tokens[i].end)}))
            for members in groups]


def _chip(i: int, tok: PromptToken, selected: int | None, extra: str = "") -> str:
    classes = "tbt-chip" + (" tbt-special" if tok.special else "") + (
        " tbt-fragment" if tok.fragment else "") + (" tbt-selected" if i == selected else "") + extra
    title = f"{tok.text}\nid {tok.id} · bytes {tok.bytes_hex}"
    return (f'<span class="{classes}" data-index="{i}" title="{esc(title)}" '
            f'style="background:{PALETTE[i % len(PALETTE)]}">'
            f'<span class="tbt-text">{chip_text(tok.text)}</span><span class="tbt-id">{tok.id}</span></span>')


def chips_html(tokens: list[PromptToken], chars: str | None, selected: int | None = None) -> str:
    """Chips for `tokens`; byte pieces of one character sit in a box under that character.

    `chars` is the text the spans index; without it a group's characters are decoded from bytes.
    """
    out = []
    for members, char_idx in token_groups(tokens):
        group = [tokens[i] for i in members]
        if chars is not None:
            text = "".join(chars[c] for c in char_idx)
        else:
            text = b"".join(bytes.fromhex(t.bytes_hex) for t in group).decode("utf-8", "replace")
        if len(members) == 1 and not group[0].fragment:
            out.append(_chip(members[0], group[0], selected))
        else:
            pieces = "".join(_chip(i, tokens[i], selected) for i in members)
            out.append(f'<span class="tbt-group" title="{esc(text)}"><span class="tbt-chars">'
                       f'{chip_text(text)}</span><span class="tbt-pieces">{pieces}</span></span>')
        if text.endswith("\n") or (chars is None and group[-1].text.endswith("\n")):
            out.append(BREAK)
    return f'<div class="tbt-chips">{"".join(out)}</div>'


def _count(value: int, key: str, lang: str) -> str:
    return f'<span class="tbt-count"><b>{value:,}</b> {esc(label(key, lang))}</span>'


def prompt_html(trace: Trace, selected: int | None = None, lang: str = "en") -> str:
    """The templated prompt as token chips, with character and token counts above."""
    prompt = trace.prompt
    counts = (_count(len(prompt.raw), "prompt_chars", lang)
              + _count(prompt.raw_token_count, "prompt_raw_tokens", lang))
    if trace.settings.chat_template:          # the templated count only where a template was applied
        counts += _count(len(prompt.tokens), "prompt_tmpl_tokens", lang)
    legend = (f'<span class="tbt-chip tbt-special"><span class="tbt-text">'
              f'{esc(label("legend_special", lang))}</span></span>'
              f'<span class="tbt-group"><span class="tbt-chars">{esc(label("legend_fragment", lang))}'
              f'</span></span><span>{esc(label("legend_id", lang, n=f"{trace.model.vocab_size:,}"))}</span>')
    return (f'<div class="tbt tbt-prompt"><div class="tbt-counts">{counts}</div>'
            f'{chips_html(prompt.tokens, prompt.templated, selected)}'
            f'<div class="tbt-legend">{legend}</div></div>')


def compare_html(tokens_a: list[PromptToken], name_a: str, tokens_b: list[PromptToken], name_b: str,
                 lang: str = "en") -> str:
    """The same text under two tokenizers, side by side, each with its token count."""
    columns = []
    for tokens, name in ((tokens_a, name_a), (tokens_b, name_b)):
        chars = max((t.end for t in tokens), default=0) - min((t.start for t in tokens), default=0)
        head = (f'<div class="tbt-compare-head"><b>{esc(name)}</b>'
                f'{_count(len(tokens), "count_tokens", lang)}{_count(chars, "prompt_chars", lang)}</div>')
        columns.append(f'<div class="tbt-compare-col">{head}'
                       f'{chips_html(tokens, None)}</div>')
    return f'<div class="tbt tbt-compare">{"".join(columns)}</div>'


def p_colour(p: float) -> str:
    """Background for a generated token: pale when the model was sure, deep orange when not."""
    p = min(max(p, 0.0), 1.0)
    return f"hsl(28, 92%, {58 + 38 * p:.0f}%)"


def _step_chip(s: Step, selected: int | None, lang: str, piece: bool = False) -> str:
    partial = s.text == "" or piece  # a byte piece of a character: show the token, not the text
    classes = "tbt-step" + (" tbt-forced" if s.forced else "") + (" tbt-partial" if partial else "") + (
        " tbt-selected" if s.index == selected else "")
    notes = [label(key, lang) for key, on in (("partial_char", partial), ("forced", s.forced)) if on]
    title = "\n".join([s.token, f"id {s.id} · p {fmt_p(s.chosen_p_model)}", *notes])
    return (f'<span class="{classes}" data-step="{s.index}" title="{esc(title)}" '
            f'style="background:{p_colour(s.chosen_p_model)}">{chip_text(s.token if partial else s.text)}'
            f'</span>' + (BREAK if s.text.endswith("\n") else ""))


def _joined_chip(steps: list[Step], selected: int | None, lang: str) -> str:
    """Characters that took several byte-piece tokens, drawn as the text they form (Chinese reads as
    prose) and coloured by the probability of the whole sequence (the product of its steps'); the
    pieces appear on hover or focus. A click on the text picks the step that completed it."""
    last = steps[-1]
    p = math.prod(st.chosen_p_model for st in steps)
    chosen = selected is not None and any(st.index == selected for st in steps)
    pieces = "".join(_step_chip(st, selected, lang, piece=True) for st in steps)
    title = "\n".join([last.text, label("joined_note", lang, n=len(steps)), f"p {fmt_p(p)}"])
    return (f'<span class="tbt-step tbt-joined{" tbt-selected" if chosen else ""}" data-step="{last.index}" '
            f'tabindex="0" title="{esc(title)}" style="background:{p_colour(p)}">{chip_text(last.text)}'
            f'<span class="tbt-pieces">{pieces}</span></span>' + (BREAK if last.text.endswith("\n") else ""))


def output_html(trace: Trace, selected: int | None = None, lang: str = "en") -> str:
    """The generated text, one chip per step, thinking apart from the answer; a caret while running.

    Called after every generated token, so it is one pass over the steps and string joins.
    """
    blocks: list[tuple[str, list[str]]] = []
    for group in grouped(trace.steps):   # byte pieces with the step completing their character (pieces.py)
        s = group[-1]
        kind = "thinking" if s.phase == "thinking" else "answer"
        if not blocks or blocks[-1][0] != kind:
            blocks.append((kind, []))
        if is_piece(s):   # a character still incomplete (the run is going on, or was cut off mid-character)
            blocks[-1][1].extend(_step_chip(p, selected, lang) for p in group)
        elif len(group) > 1:   # the character(s) as prose; the tokens that formed them on hover
            blocks[-1][1].append(_joined_chip(group, selected, lang))
        else:
            blocks[-1][1].append(_step_chip(s, selected, lang))
    if trace.summary is None:  # still running: a blinking caret where the next token will land
        if not blocks:
            blocks.append(("answer", []))
        blocks[-1][1].append('<span class="tbt-caret"></span>')
    labelled = len(blocks) > 1  # name the blocks only when thinking and answer are both there
    body = "".join(
        f'<div class="tbt-{kind}">'
        + (f'<div class="tbt-block-label">{esc(label(kind, lang))}</div>' if labelled else "")
        + f'<div class="tbt-chips">{"".join(chips)}</div></div>' for kind, chips in blocks)
    joined = any('tbt-joined' in chip for _, chips in blocks for chip in chips)
    foot = (f'<span class="tbt-step tbt-joined tbt-joined-key">{esc(label("legend_joined", lang))}</span> '
            if joined else "")
    foot += (f'<span class="tbt-scale"><span style="background:{p_colour(1)}">{esc(label("prob_high", lang))}'
            f'</span><span style="background:{p_colour(0)}">{esc(label("prob_low", lang))}</span></span> '
            f'{esc(label("prob_legend", lang))}')
    if trace.summary is not None:
        foot += " · " + esc(stop_text(trace.summary.stop_reason, lang))
    return f'<div class="tbt tbt-output">{body}<div class="tbt-legend">{foot}</div>{plain_text_html(trace, lang)}</div>'


def plain_text_html(trace: Trace, lang: str = "en") -> str:
    """The finished answer as plain text, to read or copy without the chips' ␣ marks: each step's
    characters in order (a character cut off mid-way, still byte pieces, left out); "" while running."""
    if trace.summary is None or not trace.steps:
        return ""
    parts: dict[str, list[str]] = {}
    for s in trace.steps:
        if s.text and not HEX_FRAGMENT.fullmatch(s.text):
            parts.setdefault("thinking" if s.phase == "thinking" else "answer", []).append(s.text)
    labelled = len(parts) > 1
    text = "\n\n".join((f"[{label(kind, lang)}]\n" if labelled else "") + "".join(chunks).strip("\n")
                         for kind, chunks in parts.items())
    return (f'<details class="tbt-plain-text"><summary>{esc(label("answer_plain_text", lang))}</summary>'
            f'<div class="tbt-plain" style="white-space:pre-wrap">{esc(text)}</div></details>')


def stop_words(reason: str, lang: str) -> str:
    """A stop reason (engine.schema.trace.STOP_REASONS) in words; anything else as it is."""
    return label(f"stop_{reason}", lang) if reason in STOP_REASONS else reason


def stop_text(reason: str, lang: str) -> str:
    """Why generation stopped, in words ("eos" -> "stopped: the model ended its answer")."""
    return label("stop_line", lang, reason=stop_words(reason, lang))
