"""Byte pieces grouped into the characters they form: the one rule every view of generated text follows.

A byte-level tokenizer often spends two or three tokens on one Chinese character or emoji: each such
token holds a piece of the character's UTF-8 bytes and completes no text of its own (its `text` is "";
its printable form is hex, "<E4 BB>"). Read as prose, those pieces belong with the step that completes
the character, whose `text` is the whole character. A run cut off mid-character keeps the pieces it had
as hex in its last step's text ("小明有12个<E8>"): prose shows such a cut character as CUT.
One rule groups them everywhere, `byte_groups`: a group ends where the tokens' bytes so far end on a
character boundary. Chapter 1's prompt chips (viz/html/chips.py: token_groups), the answer chips, the
fork tree, chapter 7's columns and the slides all group with it.
"""

from __future__ import annotations

import codecs

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


def byte_groups(chunks: list[bytes]) -> list[list[int]]:
    """Indices of `chunks` (each token's raw bytes) in groups: a group ends where the bytes so far end
    on a UTF-8 character boundary, so byte pieces join the token that completes their character; a
    run still incomplete at the end (the run going on, or cut off) is a group of its own. Bytes that
    can never form a character end their group too (the decoder replaces them and starts afresh)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    groups: list[list[int]] = []
    pending: list[int] = []
    for i, chunk in enumerate(chunks):
        pending.append(i)
        decoder.decode(chunk)
        if not decoder.getstate()[0]:
            groups.append(pending)
            pending = []
    if pending:
        groups.append(pending)
    return groups


def _bytes(step: Step) -> bytes:
    try:
        return bytes.fromhex(step.bytes_hex)
    except ValueError:              # not hex: no bytes to join (its text stands alone)
        return b""


def grouped(steps: list[Step]) -> list[list[Step]]:
    """The steps in the groups of `byte_groups` (their bytes)."""
    return [[steps[i] for i in g] for g in byte_groups([_bytes(st) for st in steps])]


def readable(text: str) -> str:
    """Text with the hex of a cut-off character (a flushed fragment such as "<E8>") shown as CUT."""
    return HEX_FRAGMENT.sub(CUT, text)


def group_text(group: list[Step]) -> str:
    """The characters a group forms (CUT for pieces of a character never completed)."""
    text = readable("".join(st.text for st in group if not is_piece(st)))
    return text if not is_piece(group[-1]) or text.endswith(CUT) else text + CUT


def plain_text(steps: list[Step]) -> str:
    """The steps' text as a reader reads it: characters whole, a cut-off one as CUT, never hex."""
    return "".join(group_text(g) for g in grouped(steps))
