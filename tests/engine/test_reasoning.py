"""Reasoning mode: thinking detected from real chat templates, phases, budget forcing, eval."""

import copy

import pytest

from engine import Engine, Settings, run_trace
from engine.bench.evaluation import QUESTIONS, answer_text, evaluate, is_correct, wilson
from engine.model.loading import LoadedModel
from engine.run.reasoning import CLOSE, FORCED_CLOSE, SCAFFOLD_ANSWER_CUE, thinking_style
from tests.paths import FIXTURES

TEMPLATES = FIXTURES / "chat_templates"


def with_template(engine, name: str) -> Engine:
    """The same weights, with a tokenizer whose chat template is one of the fixtures."""
    tokenizer = copy.deepcopy(engine.tokenizer)
    tokenizer.chat_template = (TEMPLATES / name).read_text(encoding="utf-8")
    return Engine(LoadedModel(engine.model, tokenizer, engine.info), engine.limits)


def test_thinking_style_comes_from_the_chat_template(engine):
    assert thinking_style(engine.tokenizer) == "scaffold"            # SmolLM2: no thinking of its own
    assert with_template(engine, "qwen3.jinja").thinking_style == "switch"
    assert with_template(engine, "deepseek_r1_distill.jinja").thinking_style == "tags"
    no_template = copy.deepcopy(engine.tokenizer)
    no_template.chat_template = None
    assert thinking_style(no_template) == "scaffold"


def thinking_checks(trace, budget: int, close_tokens: int):
    steps, s = trace.steps, trace.summary
    first_answer = next(i for i, st in enumerate(steps) if st.phase == "answer" and not st.forced)
    assert 1 <= first_answer and all(st.phase == "thinking" for st in steps[:first_answer] if not st.forced)
    assert s.time_to_first_answer_ms > s.ttft_ms
    thought = "".join(st.text for st in steps[:first_answer])
    assert CLOSE in thought                                           # closed before the answer
    assert all(st.phase == "answer" for st in steps[first_answer:])
    chosen_thinking = sum(st.phase == "thinking" and not st.forced for st in steps)
    assert chosen_thinking <= budget
    assert s.thinking_tokens <= budget + close_tokens


def test_scaffolded_reasoning_on_the_default_model(engine):
    budget = 24
    trace = run_trace(engine, "What is 17 + 25?",
                      Settings(max_new_tokens=budget + 24, mode="reasoning", thinking_budget=budget))
    assert trace.reasoning == "scaffold"
    assert trace.prompt.templated.rstrip().endswith("Let me think step by step.")
    thinking_checks(trace, budget, len(engine.encode(FORCED_CLOSE, templated=True)))
    assert any(st.forced for st in trace.steps)
    normal = run_trace(engine, "What is 17 + 25?", Settings(max_new_tokens=24))
    assert normal.reasoning is None and {st.phase for st in normal.steps} == {"answer"}
    assert normal.summary.time_to_first_answer_ms == normal.summary.ttft_ms


def test_budget_zero_means_normal_mode(engine):
    trace = run_trace(engine, "Hi", Settings(max_new_tokens=4, mode="reasoning", thinking_budget=0))
    assert trace.reasoning is None and "<think>" not in trace.prompt.templated


def test_native_switch_template(engine):
    qwen = with_template(engine, "qwen3.jinja")
    on = run_trace(qwen, "What is 2 + 2?", Settings(max_new_tokens=6, mode="reasoning", thinking_budget=4))
    off = run_trace(qwen, "What is 2 + 2?", Settings(max_new_tokens=6))
    assert on.reasoning == "switch"
    assert on.prompt.templated.endswith("<|im_start|>assistant\n")           # the model opens <think> itself
    assert off.prompt.templated.endswith("<think>\n\n</think>\n\n")          # pre-closed: no thinking


def test_native_tags_template_forces_the_close(engine):
    r1 = with_template(engine, "deepseek_r1_distill.jinja")
    budget = 12
    trace = run_trace(r1, "What is 2 + 2?",
                      Settings(max_new_tokens=budget + 16, mode="reasoning", thinking_budget=budget))
    assert trace.reasoning == "tags" and trace.prompt.templated.endswith("<think>\n")
    thinking_checks(trace, budget, len(engine.encode(FORCED_CLOSE, templated=True)))
    normal = run_trace(r1, "What is 2 + 2?", Settings(max_new_tokens=4))
    assert normal.prompt.templated.endswith("</think>\n\n")


@pytest.mark.parametrize("question, answer, ok", [
    (QUESTIONS[0], " The answer is 42.", True),
    (QUESTIONS[0], "41 or 42", False),
    (QUESTIONS[5], "2,500 grams", True),
    (QUESTIONS[8], "It will be Thursday, not Friday.", True),
    (QUESTIONS[8], "Friday. Thursday is wrong", False),
    (QUESTIONS[9], "Yes, 17 is prime", True),
    (QUESTIONS[-1], "两天后是星期五。", True),
    (QUESTIONS[-1], "星期四", False),
    (QUESTIONS[0], "17 + 25 = 42", True),                  # a restated question: the result counts
    (QUESTIONS[0], "17 + 25 = 32", False),
    (QUESTIONS[0], "I think 40.\nFinal answer: 42", True),  # the model's own cue: read after it
    (QUESTIONS[0], "\n\n 42 apples", True),
    (QUESTIONS[0], "no idea", False),
])
def test_answer_checking(question, answer, ok):
    assert is_correct(question, answer) is ok


def test_eval_measures_each_budget(engine):
    result = evaluate(engine, [0, 8], limit=2, answer_tokens=12)
    assert [b["budget"] for b in result["budgets"]] == [0, 8]
    asked = {q.id: q for q in QUESTIONS}
    for row in result["budgets"]:
        # every summary figure is recomputed from the per-question records it summarises
        records = [q["results"][str(row["budget"])] for q in result["questions"]]
        for q, r in zip(result["questions"], records):
            assert r["correct"] is is_correct(asked[q["id"]], r["answer"]), (q["id"], r["answer"])
        right = sum(r["correct"] for r in records)
        assert row["questions"] == len(records) == 2 and row["correct"] == right
        assert row["accuracy"] == pytest.approx(right / len(records))
        assert row["mean_e2e_ms"] == pytest.approx(sum(r["e2e_ms"] for r in records) / len(records))
        assert all(r["e2e_ms"] > 0 for r in records)
    assert result["budgets"][1]["mean_thinking_tokens"] > 0 == result["budgets"][0]["mean_thinking_tokens"]
    assert set(result["questions"][0]["results"]) == {"0", "8"}
    for row in result["budgets"]:                          # the interval holds the measured accuracy
        low, high = row["ci95"]
        assert 0 <= low <= row["accuracy"] <= high <= 1
        assert row["answered"] + row["never_answered"] == row["questions"]


def test_every_budget_is_asked_with_the_same_cue(engine):
    """Budget 0 (normal mode) gets the scaffold's answer cue too, so budgets differ only in thinking."""
    normal = run_trace(engine, "What is 17 + 25?", Settings(max_new_tokens=4, answer_cue=True))
    assert normal.prompt.templated.endswith(SCAFFOLD_ANSWER_CUE)
    thinking = run_trace(engine, "What is 17 + 25?", Settings(max_new_tokens=12, mode="reasoning",
                                                              thinking_budget=4, answer_cue=True))
    cue = "".join(s.text for s in thinking.steps if s.forced and s.phase == "answer")
    assert cue == SCAFFOLD_ANSWER_CUE


def test_wilson_interval():
    assert wilson(0, 20)[0] == 0 and wilson(0, 20)[1] == pytest.approx(0.1611, abs=1e-3)
    assert wilson(4, 20) == pytest.approx((0.0807, 0.4160), abs=1e-3)
    assert wilson(20, 20)[1] == 1


def test_a_run_that_never_answers_is_counted_apart():
    from viz.charts.reasoning import eval_reading
    result = {"budgets": [
        {"budget": 0, "questions": 20, "correct": 0, "accuracy": 0.0, "ci95": list(wilson(0, 20)),
         "answered": 20, "never_answered": 0},
        {"budget": 128, "questions": 20, "correct": 4, "accuracy": 0.2, "ci95": list(wilson(4, 20)),
         "answered": 17, "never_answered": 3}]}
    overlap, unanswered = eval_reading(result, "en")
    assert "overlap" in overlap and "could be chance" in overlap and "3 runs never reached an answer" in unanswered


def test_answer_text_leaves_out_forced_cues(engine):
    trace = run_trace(engine, "What is 9 times 8?", Settings(max_new_tokens=20, mode="reasoning",
                                                             thinking_budget=6))
    assert "Final answer:" not in answer_text(trace)
