"""A refusal is said in the page's language, and a sentence out of step with its error still says something."""

from engine.errors import InvalidRequest
from ui.host.errors import message


def test_a_keyed_refusal_is_said_in_chinese_and_stays_english_for_english():
    exc = InvalidRequest("step 9 is outside this run's steps 0..3", "fork_step", step="9", last=3)
    assert message(exc, "en") == str(exc)
    assert "第 9 步" in message(exc, "zh") and "3" in message(exc, "zh")


def test_a_sentence_missing_a_value_falls_back_to_the_english_message():
    exc = InvalidRequest("step 9 is outside this run's steps", "fork_step", step="9")     # no `last`
    assert message(exc, "zh") == str(exc)
    assert message(InvalidRequest("plain", "no_such_key"), "zh") == "plain"
