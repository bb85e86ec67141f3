"""The answer is also shown as plain text beside its chips: the characters the steps made, in order,
without ␣ marks or byte pieces, escaped; only once the run has finished."""

from __future__ import annotations

import copy

import pytest

from ui.host.recordings import recorded
from viz.html.chips import output_html, plain_text_html


@pytest.mark.parametrize("lang,kind", [("en", "normal"), ("zh", "normal"), ("zh", "next")])
def test_the_finished_answer_reads_as_plain_text(lang, kind):
    trace = recorded(lang)[kind]
    shown = plain_text_html(trace, lang)
    assert shown and shown in output_html(trace, lang=lang)
    body = shown.split('white-space:pre-wrap">', 1)[1].removesuffix("</div></details>")
    assert "␣" not in body and "<E" not in body and body.strip()
    expected = "".join(s.text for s in trace.steps if not s.text.startswith("<")).strip("\n")
    assert body == expected.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def test_thinking_and_answer_are_labelled_apart_and_markup_stays_text():
    trace = copy.deepcopy(recorded("en")["reasoning"])
    trace.steps[-1].text = "<img src=x onerror=alert(1)>"
    shown = plain_text_html(trace, "en")
    assert "[thinking]" in shown and "[answer]" in shown and "<img" not in shown and "&lt;img" in shown


def test_nothing_while_the_run_is_going():
    trace = copy.deepcopy(recorded("en")["normal"])
    trace.summary = None
    assert plain_text_html(trace, "en") == "" and "tbt-plain" not in output_html(trace, lang="en")
