"""Issue 39 items 7 and 4: slides downloaded from a visitor's own run carry only that run's words and
numbers (not the recording's narration, its Xiao Ming story, or chapter 7's recorded apple pair
under "measured"), and the answer on them reads as characters (a cut-off one as "…", never hex)."""

import re

import pytest

from engine.schema.trace import Trace
from tests.paths import FIXTURES
from ui.host.recordings import recorded
from ui.page.i18n import text
from ui.share.deck import deck_html, own_steps
from ui.walkthrough.steps import STEPS


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_deck_of_ones_own_run_carries_none_of_the_recording(lang):
    run = Trace.from_json((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))     # 什么是量子计算, cut mid-character
    page = deck_html({"next": run}, lang, live=True)
    slides = page.count('<section class="slide')
    assert slides == 1 + len(own_steps({"next": run})) and slides < 1 + len(STEPS)
    assert run.prompt.raw in page
    rec = recorded(lang)
    for trace in rec.values():              # neither the recording's prompts nor its answers
        assert trace.prompt.raw not in page
    assert ("Xiao Ming" if lang == "en" else "小明") not in page and ("apples" if lang == "en" else "苹果") not in page
    # no narration of the walkthrough (it tells the recording's example and quotes its figures)
    for i in range(len(STEPS)):
        narration = text(f"wt_{i}_text", lang)
        assert narration[:40] not in page
    answer = re.search(r"(?:The answer:|回答：)</strong>([^<]*)", page)
    assert answer and "什么是量子…" in answer.group(1) and "<E8" not in answer.group(1) and "&lt;E8" not in answer.group(1)


def test_the_recordings_deck_keeps_every_step_and_its_narration():
    page = deck_html(None, "en")
    assert page.count('<section class="slide') == 1 + len(STEPS)
    assert recorded("en")["next"].prompt.raw in page
