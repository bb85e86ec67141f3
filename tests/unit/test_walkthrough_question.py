"""Chapter 7's question is one problem in every language: a presenter who switches language mid-talk
gets the same question, the same right answer and recordings of that question."""

import json
import re

from engine.bench.evaluation import QUESTIONS
from tests.paths import ROOT
from ui.chapters.reasoning import builtin_question
from ui.host.recordings import prompt_of
from viz.text.strings import LANGS

MANIFEST = json.loads((ROOT / "assets" / "traces" / "manifest.json").read_text(encoding="utf-8"))


def test_the_question_is_the_same_problem_in_both_languages():
    en = prompt_of("en", "question")
    original = next(q for q in QUESTIONS if q.text == en)          # English: a built-in question as it is
    for lang in LANGS:
        asked = builtin_question(prompt_of(lang, "question"))
        assert asked is not None and asked.answer == original.answer, (lang, asked)
        assert asked.lang == lang
        # the same numbers in the same order: the same problem, not another one of the set
        assert re.findall(r"\d+", prompt_of(lang, "question")) == re.findall(r"\d+", en), lang
    assert builtin_question("What is the weather like?") is None


def test_the_recordings_ask_that_question():
    """The recordings chapter 7 replays were made of that question (assets/traces/manifest.json)."""
    for lang in LANGS:
        for mode in ("normal", "reasoning"):
            args = MANIFEST["traces"][f"{lang}-{mode}.json"]
            assert args[args.index("--prompt") + 1] == prompt_of(lang, "question"), (lang, mode)
            trace = json.loads((ROOT / "assets" / "traces" / f"{lang}-{mode}.json").read_text(encoding="utf-8"))
            assert trace["prompt"]["raw"] == prompt_of(lang, "question"), (lang, mode)
