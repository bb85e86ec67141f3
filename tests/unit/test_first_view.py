"""The views open on something a reader can read: a whole word or character, never a byte piece of
one (a Chinese character is often two or three tokens such as <E5 B0> <8F>)."""

from __future__ import annotations

import pytest

from ui.chapters.tokens import first_word
from ui.chapters.decode import first_readable_step, least_sure_step, readable_step
from ui.chapters.tokens import whole_word
from ui.host.recordings import recorded
from viz.fmt import HEX_FRAGMENT


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_embedding_opens_on_a_whole_word(lang):
    trace = recorded(lang)["next"]
    token = trace.prompt.tokens[first_word(trace)]
    assert not token.fragment and not HEX_FRAGMENT.fullmatch(token.text) and token.text.strip().isalpha()
    # English: a word by itself, not the "X" of "X" + "iao"
    assert token.text == {"en": " Ming", "zh": "了"}[lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sampling_and_decode_open_on_steps_whose_candidates_read_as_text(lang):
    trace = recorded(lang)["next"]
    for index in (least_sure_step(trace), first_readable_step(trace)):
        step = trace.steps[index]
        assert readable_step(step) and not HEX_FRAGMENT.fullmatch(step.token)
        top = step.candidates[:10]
        assert sum(c.p_model for c in top if not HEX_FRAGMENT.fullmatch(c.text)) >= 0.5 * sum(c.p_model for c in top)
    if lang == "en":       # unchanged where every step reads: the least sure step, the word after "then he"
        assert least_sure_step(trace) == max(range(len(trace.steps)), key=lambda i: trace.steps[i].entropy_model)
        assert first_readable_step(trace) == 0


def test_a_piece_of_a_word_is_not_a_whole_word():
    class Tok:
        def __init__(self, text, fragment=False, special=False):
            self.text, self.fragment, self.special = text, fragment, special
    tokens = [Tok("X"), Tok("iao"), Tok(" Ming"), Tok(","), Tok("<E5 B0>", fragment=True), Tok("了"), Tok(" "),
              Tok("<|im_end|>", special=True)]
    assert [whole_word(tokens, i) for i in range(len(tokens))] == [False, False, True, False, False, True, False,
                                                                     False]
