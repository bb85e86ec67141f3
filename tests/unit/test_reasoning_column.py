"""Issue 48 item 9: chapter 7's thinking block said "Thinking (53 tokens)" under a 48-token budget (it
counted the closing tokens the engine inserts), and an answer cut by the token limit ended mid-sentence
with no word of why."""

import dataclasses
import re

import pytest

from ui.host.recordings import recorded
from viz.html.reasoning import reasoning_html


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_thinking_block_counts_what_the_budget_counts(lang):
    trace = recorded(lang)["reasoning"]
    chosen = sum(s.phase == "thinking" and not s.forced for s in trace.steps)
    inserted = sum(s.phase == "thinking" and s.forced for s in trace.steps)
    assert inserted > 0                                 # the recording closes its thinking by force
    summary = re.search(r"<summary>(.*?)</summary>", reasoning_html(trace, lang)).group(1)
    numbers = [int(n) for n in re.findall(r"\d+", summary)]
    assert numbers == [chosen, trace.settings.thinking_budget], summary
    assert chosen <= trace.settings.thinking_budget


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_answer_cut_by_the_token_limit_says_so(lang):
    trace = recorded(lang)["normal"]
    cut = dataclasses.replace(trace, summary=dataclasses.replace(trace.summary, stop_reason="max_tokens"))
    ended = dataclasses.replace(trace, summary=dataclasses.replace(trace.summary, stop_reason="eos"))
    assert "tbt-cut" in reasoning_html(cut, lang) and str(trace.settings.max_new_tokens) in reasoning_html(cut, lang)
    assert "tbt-cut" not in reasoning_html(ended, lang)
