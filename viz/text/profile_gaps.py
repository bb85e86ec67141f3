"""Why the profile's passes and the run's cards give different times for the same pass, said from
the profile's own figures (engine/profile/run.py): what the timers on every op cost (timed pass
against the pass alone, beside how much the plain passes varied), what a first call costs (the
replay's warm-up pass, kept out of the medians), and how the run's own pass compares."""

from __future__ import annotations

from datetime import datetime

from viz.fmt import fmt_ms
from viz.text.labels import label
from viz.text.load_note import load_note

FIRST_CALL = 1.2          # a warm-up pass this much slower than the median is said to pay a first call's costs
APART_S = 3600            # a run and its replay timed further apart than this are said to be apart
CLOSE = 1.15              # the run's pass within this factor of the replay's is said to agree


def _timers(p: dict, lang: str) -> str:
    plain, hooked, runs = p["forward_ms"], p["hooked_ms"], p.get("plain_runs") or [p["forward_ms"]]
    lo, hi = min(runs), max(runs)
    values = dict(hooked=fmt_ms(hooked), plain=fmt_ms(plain), lo=fmt_ms(lo), hi=fmt_ms(hi),
                  diff=fmt_ms(abs(hooked - plain)), n=len(runs))
    inside = abs(hooked - plain) <= hi - lo
    key = "prof_gap_timers_noise" if inside else "prof_gap_timers_faster" if hooked < plain else "prof_gap_timers"
    return label(key, lang, **values)


def _apart(profile: dict) -> bool:
    """Whether the run and its replay were timed more than an hour apart (a recorded profile may
    replay its run days later); a live profile replays its run right after it."""
    try:
        run, replay = (datetime.fromisoformat(profile[k]) for k in ("created", "measured"))
    except (KeyError, TypeError, ValueError):
        return False
    return abs((replay - run).total_seconds()) > APART_S


def _run(p: dict, run_ms: float | None, days: tuple[str, str] | None, lang: str) -> str:
    """The run's own pass (the cards) against the replay's; `days`: the dates the run and the replay
    were timed on, where they were timed apart (`_apart`), else None."""
    if run_ms is None or run_ms <= 0:
        return ""
    plain, warm = p["forward_ms"], p.get("warmup_ms")
    first = warm is not None and warm > FIRST_CALL * plain
    values = dict(run=fmt_ms(run_ms), plain=fmt_ms(plain), x=f"{run_ms / plain:.1f}×" if plain > 0 else "—",
                  warm=fmt_ms(warm) if warm is not None else "—", run_day=(days or ("",))[0], day=(days or ("", ""))[1])
    if plain > 0 and run_ms <= CLOSE * plain:
        return label("prof_gap_run_agrees", lang, **values)
    if days:
        return label("prof_gap_run_apart", lang, **values)
    if first:
        return label("prof_gap_run_first_call", lang, **values)
    return label("prof_gap_run_unexplained", lang, **values)


def gaps_md(profile: dict, lang: str = "en") -> str:
    """Each phase's gaps in a sentence or two, then the replay's load when the machine was busy."""
    run = profile.get("run_ms") or {}
    days = (profile["created"][:10], profile["measured"][:10]) if _apart(profile) else None
    lines = []
    for phase in ("prefill", "decode"):
        p = (profile.get("phases") or {}).get(phase)
        if not p:
            continue
        said = ("" if lang == "zh" else " ").join(filter(None, (_timers(p, lang), _run(p, run.get(phase), days, lang))))
        lines.append(f"{label(f'prof_gap_{phase}', lang)}{said}")
    busy = load_note(profile.get("load"), lang)
    return "  \n".join(lines + ([busy] if busy else []))
