"""Test-time compute, measured: accuracy and time on small checkable questions at several thinking
budgets (budget 0 = normal mode). Greedy decoding, so a result is reproducible on one machine.

Fair by construction:
- every budget is asked the same way: where the engine cues the answer ("Final answer:", for a
  model without thinking of its own), budget 0 gets the same cue (Settings.answer_cue);
- the answer is read after the cue: in the first line that has a number, the number after its last
  "=" if it is an equation (so "17 + 25 = 42" reads 42, not 17), else its first number; or the
  first option it names;
- a run that never reaches an answer (no answer token of the model's own) is counted apart:
  wrong for accuracy, left out of the time to answer (its end-to-end time is not an answer time);
- budgets are interleaved per question, in an order that rotates from question to question, so a
  machine that slows down over the run does not favour one budget;
- each accuracy comes with its 95 % Wilson interval: 20 questions cannot tell 0 % from 15 % apart.
"""

from __future__ import annotations

import math
import re
import statistics
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import InvalidRequest
from engine.run.reasoning import SCAFFOLD_ANSWER_CUE
from engine.schema.trace import Settings, Trace

if TYPE_CHECKING:        # torch loads with the first run, not with this module (the page starts first)
    from engine.model.core import Engine

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
ZH_WEEKDAYS = ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日", "星期天"]
NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")
BYTE_PIECE = re.compile(r"<[0-9A-F]{2}(?: [0-9A-F]{2})*>")   # the trace's form of a partial character


@dataclass(frozen=True)
class Question:
    id: str
    lang: str
    text: str
    answer: str
    options: tuple[str, ...] = ()    # empty: a number; else the first option named is the answer


# The budgets the page and `python -m engine eval` measure unless told otherwise; the recording
# (assets/eval/smollm2-cpu.json) was made with these.
BUDGETS = (0, 32, 128)
QUESTIONS = [
    Question("add", "en", "What is 17 + 25?", "42"),
    Question("mul", "en", "What is 9 times 8?", "72"),
    Question("sub", "en", "What is 100 minus 37?", "63"),
    Question("cm", "en", "How many centimeters are in 3 meters?", "300"),
    Question("min", "en", "How many minutes are in 2 hours?", "120"),
    Question("gram", "en", "How many grams are in 2.5 kilograms?", "2500"),
    Question("apples", "en", "Tom has 5 apples and buys 7 more. How many apples does he have now?", "12"),
    Question("train", "en", "A train goes 60 km every hour. How many km does it go in 3 hours?", "180"),
    Question("day", "en", "Today is Monday. What day of the week will it be in 3 days?", "thursday",
             tuple(WEEKDAYS)),
    Question("prime", "en", "Is 17 a prime number? Answer yes or no.", "yes", ("yes", "no")),
    Question("zh-add", "zh", "23 加 19 等于多少？", "42"),
    Question("zh-mul", "zh", "6 乘以 8 等于多少？", "48"),
    Question("zh-km", "zh", "1 公里等于多少米？", "1000"),
    Question("zh-hours", "zh", "一天有多少个小时？", "24"),
    Question("zh-apples", "zh", "小明有 12 个苹果，吃掉了 5 个，还剩几个？", "7"),
    Question("zh-week", "zh", "一周有几天？", "7"),
    Question("zh-min", "zh", "3 小时是多少分钟？", "180"),
    Question("zh-dozen", "zh", "一打鸡蛋是几个？", "12"),
    Question("zh-sub", "zh", "50 减 18 等于多少？", "32"),
    Question("zh-day", "zh", "今天是星期三，两天后是星期几？", "星期五", tuple(ZH_WEEKDAYS)),
]


def answer_text(trace: Trace) -> str:
    """What the model answered: the answer-phase text it chose itself (forced cues left out)."""
    return "".join(s.text for s in trace.steps if s.phase == "answer" and not s.forced)


def answered(trace: Trace) -> bool:
    """Whether the model reached an answer of its own (a run can end still thinking)."""
    return any(s.phase == "answer" and not s.forced for s in trace.steps)


def read_answer(question: Question, answer: str) -> str | None:
    """The answer the text gives, read after the model's own last "Final answer:" if it wrote one:
    in the first line with a number, the number after the last "=" (an equation) or else the first
    number; for a question with options, the first option named. None if it gives none."""
    cue = answer.lower().rfind(SCAFFOLD_ANSWER_CUE.lower())
    region = answer[cue + len(SCAFFOLD_ANSWER_CUE):] if cue >= 0 else answer
    if not question.options:
        for line in region.replace(",", "").splitlines():
            numbers = NUMBER.findall(line)
            if numbers:
                result = NUMBER.findall(line.rsplit("=", 1)[1]) if "=" in line else []
                return result[0] if result else numbers[0]
        return None
    lowered = region.lower()
    named = [(lowered.find(o), o) for o in question.options if o in lowered]
    return min(named)[1] if named else None


def last_answer(question: Question, answer: str) -> str | None:
    """The answer the text ends on: in its last line with a number, the number after the last "="
    or else the last number; for a question with options, the last option named. `read_answer`
    reads the first; where the two differ, the model contradicted itself (the page says so).
    Byte pieces of an unfinished character ("<E8>") are not numbers."""
    answer = BYTE_PIECE.sub("", answer)
    cue = answer.lower().rfind(SCAFFOLD_ANSWER_CUE.lower())
    region = answer[cue + len(SCAFFOLD_ANSWER_CUE):] if cue >= 0 else answer
    if not question.options:
        for line in reversed(region.replace(",", "").splitlines()):
            result = NUMBER.findall(line.rsplit("=", 1)[1]) if "=" in line else []
            numbers = NUMBER.findall(line)
            if numbers:
                return result[0] if result else numbers[-1]
        return None
    lowered = region.lower()
    named = [(lowered.rfind(o), o) for o in question.options if o in lowered]
    return max(named)[1] if named else None


def matches(question: Question, got: str | None) -> bool:
    """Whether an answer read by `read_answer` is the expected one."""
    if got is None:
        return False
    if not question.options:
        return float(got) == float(question.answer)
    return got == question.answer


def is_correct(question: Question, answer: str) -> bool:
    return matches(question, read_answer(question, answer))


def wilson(correct: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion correct/n."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def evaluate(engine: Engine, budgets: list[int], limit: int | None = None, answer_tokens: int = 48,
             progress=None, cancel: threading.Event | None = None) -> dict:
    """Every question at every budget; per budget accuracy, mean end-to-end and answer times."""
    from engine.run.generate import run_trace
    if not budgets or len(budgets) > 6 or any(not 0 <= b <= 1024 for b in budgets):
        raise InvalidRequest("budgets: 1 to 6 values, each from 0 to 1024 thinking tokens")
    questions = QUESTIONS[:limit] if limit else QUESTIONS
    runs, total = {b: [] for b in budgets}, len(budgets) * len(questions)
    per_question = [{"id": q.id, "lang": q.lang, "question": q.text, "expected": q.answer, "results": {}}
                    for q in questions]
    done = 0
    for i, (q, row) in enumerate(zip(questions, per_question)):
        for b in budgets[i % len(budgets):] + budgets[:i % len(budgets)]:    # interleaved, rotating
            if cancel is not None and cancel.is_set():
                break
            if progress is not None:
                progress(done / total, f"{q.id}: budget {b}")
            settings = Settings(max_new_tokens=b + answer_tokens, mode="reasoning" if b else "normal",
                                thinking_budget=b, answer_cue=True)
            trace = run_trace(engine, q.text, settings)
            answer, s = answer_text(trace), trace.summary
            reached, got = answered(trace), read_answer(q, answer)
            result = {"answer": answer.strip()[:200], "read": got,
                      "correct": reached and matches(q, got), "answered": reached, "e2e_ms": s.e2e_ms,
                      "time_to_first_answer_ms": s.time_to_first_answer_ms if reached else None,
                      "thinking_tokens": s.thinking_tokens, "new_tokens": s.new_tokens}
            row["results"][str(b)] = result
            runs[b].append(result)
            done += 1
    summary = []
    for b in budgets:
        rs = runs[b]
        if not rs:
            continue
        correct, reached = sum(r["correct"] for r in rs), [r for r in rs if r["answered"]]
        low, high = wilson(correct, len(rs))
        summary.append({"budget": b, "questions": len(rs), "correct": correct, "accuracy": correct / len(rs),
                        "ci95": [round(low, 4), round(high, 4)], "answered": len(reached),
                        "never_answered": len(rs) - len(reached),
                        "mean_e2e_ms": statistics.fmean(r["e2e_ms"] for r in rs),
                        "mean_time_to_first_answer_ms": statistics.fmean(
                            r["time_to_first_answer_ms"] for r in reached) if reached else None,
                        "mean_thinking_tokens": statistics.fmean(r["thinking_tokens"] for r in rs)})
    return {"model": engine.info.id, "device": engine.info.device, "dtype": engine.info.dtype,
            "thinking": engine.thinking_style, "decoding": "greedy", "answer_tokens": answer_tokens,
            "partial": done < total, "answer_cue": SCAFFOLD_ANSWER_CUE if engine.thinking_style == "scaffold" else None,
            "order": "interleaved per question, rotating", "interval": "95 % Wilson",
            "budgets": summary, "questions": per_question}
