"""The views a trace opens on say something: Decode and Sampling open on the same word (never the
end-of-answer <|im_end|>, a byte piece or a comma when there is a word), and the prefill's attention
opens on the head with the clearest pattern in the measured attention, on a word of the visitor's
own prompt, with a sentence saying why, in en and zh. And the logit lens's hint matches its box."""

from __future__ import annotations

import copy
import json

import gradio as gr
import numpy as np
import pytest

from engine.run.request import APP_DEFAULTS
from engine.schema.validate import validate
from tests.paths import FIXTURES
from ui.chapters.common import head_index
from ui.chapters.decode import Decode
from ui.chapters.prefill import Prefill
from ui.host.recordings import recorded
from viz.opening import focus_rows, is_word, least_sure_step, own_positions, special_ids, telling_head, word_step
from viz.text.strings import said

KINDS = ("next", "normal", "reasoning")


def with_an_unsure_end(trace):
    """The recording with its last step made the answer's end, <|im_end|> (a special token of the
    prompt), and the least sure step of all: what a visitor's chat run ends with."""
    trace = copy.deepcopy(trace)
    end = next(t for t in trace.prompt.tokens if t.special and "end" in t.text)
    last = trace.steps[-1]
    last.id, last.token, last.text, last.entropy_model = end.id, end.text, "", 9.0
    return trace


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_opening_step_is_a_word_never_the_end_of_the_answer(lang, kind):
    trace = recorded(lang)[kind]
    step = trace.steps[least_sure_step(trace)]
    if any(word_step(s, special_ids(trace)) for s in trace.steps):
        assert is_word(step.token) and word_step(step, special_ids(trace)), step.token
    assert step.id not in special_ids(trace) and "<|" not in step.token
    unsure_end = with_an_unsure_end(trace) if special_ids(trace) else None
    if unsure_end is not None:
        assert least_sure_step(unsure_end) != len(unsure_end.steps) - 1


def test_the_chinese_recording_opens_on_a_word_when_one_reads():
    """zh-next: the least sure step that reads is a comma; once a word reads, it wins."""
    trace = copy.deepcopy(recorded("zh")["next"])
    comma = least_sure_step(trace)
    assert not is_word(trace.steps[comma].token)          # no step of this recording is a readable word
    word = next(i for i, s in enumerate(trace.steps) if s.token == "上")
    for i, c in enumerate(trace.steps[word].candidates):   # its candidates as whole characters
        c.text = "上下"[i % 2] if c.text.startswith("<") else c.text
    assert least_sure_step(trace) == word


class NoModel:
    """What Decode asks of the page's models: none holds this trace's model (no lens to compute)."""
    def of_trace(self, trace):
        return None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_decode_opens_on_the_same_step_as_sampling(lang):
    trace = with_an_unsure_end(recorded(lang)["normal"])
    with gr.Blocks():
        decode = Decode(NoModel(), trace.model.layers, trace.model.heads, fork_panel=lambda: None)
    drawn = decode.draw(trace, trace.model.layers - 1, "average", lang)
    step = drawn[5]["value"]
    assert step == least_sure_step(trace) and step != len(trace.steps) - 1
    assert is_word(trace.steps[step].token)
    # the fork's list holds that step's candidates, not the last step's (issue 48 item 3)
    assert [id_ for _, id_ in drawn[4]["choices"]] == [c.id for c in trace.steps[step].candidates]


def test_a_branch_opens_on_the_step_it_was_forked_at():
    """Issue 48 item 4: after a fork at step 3, Decode stayed on no step of the visitor's choosing
    (it jumped to the branch's least sure step); it opens where the branch was forked."""
    trace = recorded("en")["normal"]
    with gr.Blocks():
        decode = Decode(NoModel(), trace.model.layers, trace.model.heads, fork_panel=lambda: None)
    for at in (0, 3, len(trace.steps) - 1):
        drawn = decode.draw(trace, trace.model.layers - 1, "average", "en", at=at)
        assert drawn[5]["value"] == at
        assert [id_ for _, id_ in drawn[4]["choices"]] == [c.id for c in trace.steps[at].candidates]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_attention_opens_on_the_head_with_the_clearest_pattern(lang, kind):
    trace = recorded(lang)[kind]
    opening = telling_head(trace)
    assert opening is not None
    n = trace.attention.prefill_tokens
    # measured: no head of any layer puts more weight on one earlier token, on average
    every = [focus_rows(block.unpack())[:, 2:].mean(axis=1) for block in trace.attention.prefill]
    assert opening.focus == pytest.approx(max(float(m.max()) for m in every))
    assert opening.focus == pytest.approx(float(every[opening.layer][opening.head]))
    # the mean of all heads, the old first view, shows the pattern less sharply
    mean_of_heads = focus_rows(trace.attention.prefill[opening.layer].unpack().mean(axis=0, keepdims=True))
    assert float(mean_of_heads[0, 2:].mean()) < opening.focus
    # on a word of the visitor's own prompt, not on the chat template's "user"
    token = trace.prompt.tokens[opening.query]
    assert opening.query in own_positions(trace) and is_word(token.text) and 2 <= opening.query < n
    assert token.text.strip() not in ("user", "assistant", "system")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_prefill_opens_there_and_says_why(lang):
    trace = recorded(lang)["normal"]
    opening = telling_head(trace)
    with gr.Blocks():
        prefill = Prefill(trace.model.layers, trace.model.heads)
    facts, _, _, layer, head, query = prefill.draw(trace, 0, "average", 0, lang, fresh=True)
    assert (layer["value"], head_index(head["value"]), query["value"]) == (opening.layer, opening.head, opening.query)
    why = {"en": f"Opened on layer {opening.layer}, head {opening.head}", "zh": f"第 {opening.layer} 层、第 {opening.head} 个头"}
    assert why[lang] in facts and f"{opening.focus:.0%}" in facts, facts
    # a relabel keeps the visitor's own choice, and says nothing about an opening
    facts, *_, layer, head, query = prefill.draw(trace, 3, "2", 5, lang, fresh=False)
    assert (layer["value"], head["value"], query["value"]) == (3, "2", 5) and why[lang] not in facts


def test_a_trace_without_attention_opens_on_its_last_prompt_token():
    data = json.loads((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))
    data["attention"] = None
    from engine.schema.trace import Trace
    trace = validate(Trace.from_json(json.dumps(data)))
    assert telling_head(trace) is None
    with gr.Blocks():
        prefill = Prefill(trace.model.layers, trace.model.heads)
    *_, query = prefill.draw(trace, 0, "average", 0, "en", fresh=True)
    assert query["value"] == len(trace.prompt.tokens) - 1


def test_focus_rows_leave_out_the_first_token_and_the_token_itself():
    maps = np.zeros((1, 4, 4))
    maps[0, 3] = [0.7, 0.2, 0.05, 0.05]        # a sink-parked row: 0.2 is its one real choice
    maps[0, 2] = [0.1, 0.0, 0.9, 0.0]          # a row that looks at itself: no earlier token chosen
    rows = focus_rows(maps)[0]
    assert rows[3] == pytest.approx(0.2) and rows[2] == pytest.approx(0.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_logit_lens_hint_matches_its_box(lang):
    from ui.page.i18n import STRINGS
    hint = said(STRINGS["logit_lens_info"], lang)
    ticked = APP_DEFAULTS.logit_lens
    assert ticked and not any(w in hint for w in ("Off by default", "默认关闭", "默认不开启")), hint
