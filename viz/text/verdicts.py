"""Sentences that compare: each one computed from the figure it talks about.

A sentence such as "the cache-on line stays flat" or "int8 is faster" is a claim about a
measurement, so it is not written once in the catalogue but chosen here from the numbers: every
function below reads a figure (a lab section, an evaluation result, a trace's times), makes the
comparison it states, and returns the wording for what the figure shows, the claim or its
opposite, or "about the same" when the difference is within a stated tolerance (the run's own
min–max spread where it measured one). The sentences live in assets/strings/verdicts.json. The lab's verdicts are in lab_verdicts.py and
serving_verdicts.py; this module holds the shared comparisons and the other chapters'.

Pure functions of plain data: no torch, no Gradio (viz/ imports only the torch-free engine).
"""

from __future__ import annotations

from viz.fmt import fmt_ms
from viz.text.labels import label

SAME_SIZE = 0.05        # two sizes within 5 % are "about the same" (a byte count has no spread)
ONE_RUN = 0.10          # two single measurements within 10 % are "about the same"


def _x(ratio: float) -> str:
    """A ratio as the page writes it: "3.59×", "12.5×"."""
    return f"{ratio:.1f}×" if ratio >= 10 else f"{ratio:.2f}×"


times = _x           # the same, for the facts the fixed texts quote (viz/text/facts.py)


def span(values: list[float]) -> str:
    """Whole numbers from the smallest to the largest: "139–295" (one number when they round alike)."""
    lo, hi = f"{min(values):.0f}", f"{max(values):.0f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _pct(share: float) -> str:
    return f"{share:.0%}"


def _join(sentences: list[str], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(s for s in sentences if s)


def _low_high(spread: dict | None, median: float) -> tuple[float, float]:
    """A measurement's min and max over repeats (the median itself when none were kept)."""
    spread = spread or {}
    return float(spread.get("min", median)), float(spread.get("max", median))


def compare(a: float, a_range: tuple[float, float], b: float, b_range: tuple[float, float]) -> str:
    """"lower", "higher" or "same" for a against b: lower only when a's whole min–max range lies below
    b's, higher only when above it; overlapping ranges are "same" (within the run's spread)."""
    if a_range[1] < b_range[0]:
        return "lower"
    if a_range[0] > b_range[1]:
        return "higher"
    return "same"


# --- speed chapter ------------------------------------------------------------------------------
def ttft_by_length(rows: list[dict], lang: str) -> list[str]:
    """Whether TTFT grew from the shortest prompt to the longest, one line per run kind ("cache on",
    ...) when the rows name one (one run per length: within 10 % is "about the same")."""
    kinds = list(dict.fromkeys(r.get("runs") for r in rows))
    lines = []
    for kind in kinds:
        own = sorted((r for r in rows if r.get("runs") == kind and r.get("ttft_ms")), key=lambda r: r["prompt_tokens"])
        if len(own) < 2:
            continue
        a, b = own[0], own[-1]
        change = b["ttft_ms"] / a["ttft_ms"] - 1
        case = "grows" if change > ONE_RUN else "falls" if change < -ONE_RUN else "flat"
        line = label(f"verdict_ttft_{case}", lang, a=fmt_ms(a["ttft_ms"]), b=fmt_ms(b["ttft_ms"]),
                     n=a["prompt_tokens"], m=b["prompt_tokens"], x=_x(b["ttft_ms"] / a["ttft_ms"]), tol=_pct(ONE_RUN))
        lines.append(label("verdict_of", lang, what=kind, text=line) if kind is not None and len(kinds) > 1 else line)
    return lines


def prefill_rate(prefill_per_s: float | None, tpot_ms: float | None, lang: str) -> str:
    """The prefill-rate card's line: prompt tokens per second against this run's decode rate."""
    if not prefill_per_s or not tpot_ms:
        return label("verdict_prefill_rate_plain", lang)
    decode = 1000 / tpot_ms
    ratio = prefill_per_s / decode
    case = "faster" if ratio > 1 + ONE_RUN else "slower" if ratio < 1 - ONE_RUN else "same"
    return label(f"verdict_prefill_rate_{case}", lang, x=_x(ratio), decode=f"{decode:.3g}", tol=_pct(ONE_RUN))


# --- reasoning chapter --------------------------------------------------------------------------
def eval_budgets(result: dict, lang: str) -> str:
    """The best and worst budget's counts with their 95 % confidence intervals: one budget is called
    better only when the intervals do not overlap."""
    rows = result.get("budgets") or []
    if len(rows) < 2:
        return ""
    best = max(rows, key=lambda r: r["accuracy"])
    worst = min(rows, key=lambda r: r["accuracy"])
    values = dict(best=best["budget"], bc=best["correct"], bn=best["questions"], blo=_pct(best["ci95"][0]),
                  bhi=_pct(best["ci95"][1]), worst=worst["budget"], wc=worst["correct"], wn=worst["questions"],
                  wlo=_pct(worst["ci95"][0]), whi=_pct(worst["ci95"][1]), n=int(max(r["questions"] for r in rows)))
    if best["accuracy"] == worst["accuracy"]:
        return label("verdict_eval_equal", lang, **values)
    apart = best["ci95"][0] > worst["ci95"][1]
    return label("verdict_eval_separate" if apart else "verdict_eval_overlap", lang, **values)


def answer(first: str | None, first_right: bool, last: str | None, last_right: bool, lang: str) -> str:
    """What one answer said, judged whole: the answer the evaluation reads (its first line with a
    number) and, if the text ends on another one, that too, so a right number followed by working
    that reaches a wrong one is not called right without saying so."""
    if first is None:
        return label("verdict_no_answer", lang)
    said = label("verdict_said_right" if first_right else "verdict_said_wrong", lang, answer=first)
    if last is None or last == first:
        return label("verdict_answered", lang, said=said)
    ended = label("verdict_said_right" if last_right else "verdict_said_wrong", lang, answer=last)
    return label("verdict_answered_then", lang, said=said, ended=ended)


# --- fork: the reused prefix against recomputing it -----------------------------------------------
def fork_reuse(recompute_ms: float | None, reuse_ms: float | None, lang: str) -> str:
    """After a fork: whether reusing the cached prefix was faster than recomputing it (one run
    each: within 10 % is "about the same"), and so whether this measurement shows why servers keep
    prefixes or only that this prefix was too short to matter."""
    if not recompute_ms or not reuse_ms:
        return label("verdict_fork_why", lang)
    ratio = recompute_ms / reuse_ms
    case = "faster" if ratio > 1 + ONE_RUN else "slower" if ratio < 1 - ONE_RUN else "same"
    return label(f"verdict_fork_reuse_{case}", lang, x=_x(ratio), tol=_pct(ONE_RUN))


def first_answer(normal_ms: float | None, reasoning_ms: float | None, lang: str) -> str:
    """When each run's first answer token came: later in reasoning mode only if it came more than
    10 % later (one run each)."""
    if not normal_ms or not reasoning_ms:
        return ""
    ratio = reasoning_ms / normal_ms
    case = "later" if ratio > 1 + ONE_RUN else "sooner" if ratio < 1 - ONE_RUN else "same"
    return label(f"verdict_ttfa_{case}", lang, r=fmt_ms(reasoning_ms), n=fmt_ms(normal_ms), x=_x(ratio),
                 tol=_pct(ONE_RUN))
