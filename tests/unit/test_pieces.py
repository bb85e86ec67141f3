"""Issue 39 item 4: every place that shows generated text groups byte pieces into the characters
they form (viz/text/pieces.py): the fork tree's rows, chapter 7's columns; a character the run
stopped in the middle of reads "…", never "<E8>"; the engine's answer cue is in the page's language."""

import dataclasses
import re

import pytest

from engine.schema.trace import Trace
from tests.paths import ROOT
from viz.html.reasoning import reasoning_html
from viz.html.tree import tree_html
from viz.text.labels import label
from viz.text.pieces import CUT, grouped, is_piece, plain_text

HEX = re.compile(r"<[0-9A-F]{2}(?: [0-9A-F]{2})*>|&lt;[0-9A-F]{2}")


def recording(name: str) -> Trace:
    return Trace.from_json((ROOT / "assets" / "traces" / f"{name}.json").read_text(encoding="utf-8"))


def shown_text(page: str) -> str:
    """What a reader sees of an HTML view: its text, without attributes (titles keep the tokens)."""
    return re.sub(r"<[^>]+>", "", page)


def test_pieces_join_the_step_that_completes_their_character():
    trace = recording("zh-next")
    groups = grouped(trace.steps)
    assert sum(map(len, groups)) == len(trace.steps)
    assert any(len(g) > 1 for g in groups)                        # the zh answer has split characters
    assert all(not is_piece(g[-1]) for g in groups[:-1])
    text = plain_text(trace.steps)
    assert not HEX.search(text) and text.endswith(CUT)             # the recording stops mid-character
    assert text[:-1] == trace.output_text[: len(text) - 1]


def test_the_fork_tree_rows_read_as_characters():
    trace = recording("zh-next")
    page = tree_html(trace, "", "zh")
    assert not HEX.search(shown_text(page)), shown_text(page)[:200]
    cells = re.findall(r'grid-column:(\d+) / span (\d+)', page)
    assert sum(int(n) for _, n in cells) == len(trace.steps)        # every step in one cell, once
    assert any(int(n) > 1 for _, n in cells)


@pytest.mark.parametrize("name", ["zh-normal", "zh-reasoning", "en-reasoning", "zh-next"])
def test_chapter_7s_columns_have_no_byte_pieces(name):
    lang = name[:2]
    page = reasoning_html(recording(name), lang)
    assert not HEX.search(shown_text(page)), shown_text(page)[-200:]


def test_the_answer_cue_is_in_the_page_language():
    zh = shown_text(reasoning_html(recording("zh-reasoning"), "zh"))
    assert "Final answer" not in zh and label("answer_cue", "zh") in zh
    en = shown_text(reasoning_html(recording("en-reasoning"), "en"))
    assert "Final answer:" in en


def test_the_cue_label_is_the_engines_cue():
    from engine.run.reasoning import SCAFFOLD_ANSWER_CUE
    assert label("answer_cue", "en") == SCAFFOLD_ANSWER_CUE


def _as_prompt(steps) -> list:
    """The same tokens as chapter 1's prompt chips hold them (bytes, and the characters they touch)."""
    from engine.schema.trace import PromptToken
    out, text = [], b""
    for st in steps:
        before = len(text.decode("utf-8", "ignore"))
        text += bytes.fromhex(st.bytes_hex)
        after = len(text.decode("utf-8", "ignore"))
        out.append(PromptToken(st.id, st.text, st.bytes_hex, min(before, after - 1) if after > before else before,
                               after, is_piece(st), False))
    return out


def test_chapter_1_and_the_answer_group_byte_pieces_by_one_rule():
    """Issue 39 item 4: one grouping in the repository. "<E4 BB>什" (什 = E4 BB 80 split over two tokens)
    is one group of two tokens in the answer's steps and in chapter 1's prompt chips alike."""
    from viz.html.chips import chips_html, token_groups
    trace = recording("zh-next")
    at = next(i for i, st in enumerate(trace.steps) if st.bytes_hex == "e4bb")     # the recording's "<E4 BB>们"
    shi = dataclasses.replace(trace.steps[at + 1], text="什", bytes_hex="80")        # 什 = E4 BB 80
    steps = [trace.steps[at], shi]
    assert bytes.fromhex("e4bb80").decode() == "什" and is_piece(steps[0]) and not is_piece(steps[1])
    indices = [[steps.index(s) for s in g] for g in grouped(steps)]
    assert indices == [[0, 1]] == [members for members, _ in token_groups(_as_prompt(steps))]
    every = trace.steps[:-1]                                  # the whole answer, both ways
    assert [len(g) for g in grouped(every)] == [len(m) for m, _ in token_groups(_as_prompt(every))]
    page = chips_html(_as_prompt(steps), None)
    assert "什" in page and page.count('class="tbt-group"') == 1
