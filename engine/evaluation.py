"""Test-time compute, measured: accuracy and time on small checkable questions at several thinking
budgets (budget 0 = normal mode). Greedy decoding, so a result is reproducible on one machine."""

from __future__ import annotations

import re
import statistics
import threading
from dataclasses import dataclass

from .core import Engine
from .errors import InvalidRequest
from .generate import run_trace
from .trace import Settings, Trace

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
ZH_WEEKDAYS = ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日", "星期天"]
NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")


@dataclass(frozen=True)
class Question:
    id: str
    lang: str
    text: str
    answer: str
    options: tuple[str, ...] = ()    # empty: a number; else the first option named is the answer


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


def is_correct(question: Question, answer: str) -> bool:
    if not question.options:
        found = NUMBER.search(answer.replace(",", ""))
        return found is not None and float(found.group()) == float(question.answer)
    lowered = answer.lower()
    named = [(lowered.find(o), o) for o in question.options if o in lowered]
    return bool(named) and min(named)[1] == question.answer


def evaluate(engine: Engine, budgets: list[int], limit: int | None = None, answer_tokens: int = 48,
             progress=None, cancel: threading.Event | None = None) -> dict:
    """Every question at every budget; per budget accuracy, mean end-to-end and answer times."""
    if not budgets or len(budgets) > 6 or any(not 0 <= b <= 1024 for b in budgets):
        raise InvalidRequest("budgets: 1 to 6 values, each from 0 to 1024 thinking tokens")
    questions = QUESTIONS[:limit] if limit else QUESTIONS
    runs, total = {b: [] for b in budgets}, len(budgets) * len(questions)
    per_question = [{"id": q.id, "lang": q.lang, "question": q.text, "expected": q.answer, "results": {}}
                    for q in questions]
    done = 0
    for b in budgets:
        for q, row in zip(questions, per_question):
            if cancel is not None and cancel.is_set():
                break
            if progress is not None:
                progress(done / total, f"budget {b}: {q.id}")
            settings = Settings(max_new_tokens=b + answer_tokens, mode="reasoning" if b else "normal",
                                thinking_budget=b)
            trace = run_trace(engine, q.text, settings)
            answer = answer_text(trace)
            s = trace.summary
            result = {"answer": answer.strip()[:200], "correct": is_correct(q, answer), "e2e_ms": s.e2e_ms,
                      "time_to_first_answer_ms": s.time_to_first_answer_ms,
                      "thinking_tokens": s.thinking_tokens, "new_tokens": s.new_tokens}
            row["results"][str(b)] = result
            runs[b].append(result)
            done += 1
    summary = []
    for b in budgets:
        rs = runs[b]
        if not rs:
            continue
        summary.append({"budget": b, "questions": len(rs), "correct": sum(r["correct"] for r in rs),
                        "accuracy": sum(r["correct"] for r in rs) / len(rs),
                        "mean_e2e_ms": statistics.fmean(r["e2e_ms"] for r in rs),
                        "mean_time_to_first_answer_ms": statistics.fmean(
                            r["time_to_first_answer_ms"] or r["e2e_ms"] for r in rs),
                        "mean_thinking_tokens": statistics.fmean(r["thinking_tokens"] for r in rs)})
    return {"model": engine.info.id, "device": engine.info.device, "dtype": engine.info.dtype,
            "thinking": engine.thinking_style, "decoding": "greedy", "answer_tokens": answer_tokens,
            "partial": done < total, "budgets": summary, "questions": per_question}
