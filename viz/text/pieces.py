"""Byte pieces grouped into the characters they form: the one rule every view of generated text follows.

A byte-level tokenizer often spends two or three tokens on one Chinese character or emoji: each such
token holds a piece of the character's UTF-8 bytes and completes no text of its own (its `text` is "";
its printable form is hex, "<E4 BB>"). Read as prose, those pieces belong with the step that completes
the character, whose `text` is the whole character. A run cut off mid-character keeps the pieces it had
as hex in its last step's text ("小明有12个<E8>"): prose shows such a cut character as CUT.
Chapter 1's prompt chips group by character spans (viz/html/chips.py: token_groups); the answer chips,
the fork tree, chapter 7's columns and the slides group steps with `grouped` below.
"""

from __future__ import annotations

from engine.schema.trace import Step

from viz.fmt import HEX_FRAGMENT

CUT = "…"          # a character the run stopped in the middle of


def is_piece(step: Step) -> bool:
    """True for a step whose token holds only part of a multi-byte character (it completes no text)."""
    if step.text != "" and not HEX_FRAGMENT.fullmatch(step.text):   # a cut-off end keeps its hex as text
        return False
    try:
        bytes.fromhex(step.bytes_hex).decode("utf-8")
        return False
    except (UnicodeDecodeError, ValueError):
        return True


def grouped(steps: list[Step]) -> list[list[Step]]:
    """The steps in groups: each run of byte pieces with the step that completes their character; a
    run still incomplete at the end (the run going on, or cut off) is a group of its own."""
    groups: list[list[Step]] = []
    pending: list[Step] = []
    for st in steps:
        pending.append(st)
        if not is_piece(st):
            groups.append(pending)
            pending = []
    if pending:
        groups.append(pending)
    return groups


def readable(text: str) -> str:
    """Text with the hex of a cut-off character (a flushed fragment such as "<E8>") shown as CUT."""
    return HEX_FRAGMENT.sub(CUT, text)


def group_text(group: list[Step]) -> str:
    """The characters a group forms (CUT for pieces of a character never completed)."""
    last = group[-1]
    return CUT if is_piece(last) else readable(last.text)


def plain_text(steps: list[Step]) -> str:
    """The steps' text as a reader reads it: characters whole, a cut-off one as CUT, never hex."""
    return "".join(group_text(g) for g in grouped(steps))
