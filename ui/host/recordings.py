"""Everything the page reads from assets/ besides the string catalogue: the recordings it opens on.

Recorded on an idle machine with the project's own commands (`make traces`, `python -m engine lab`,
`python -m engine eval`), they fill every chapter and walkthrough step before a visitor runs
anything, so no box is ever empty:
- traces/<lang>-next.json: the next-token example (chapters 1-5 and 8, walkthrough steps 1-5 and 8);
- traces/<lang>-normal.json, -reasoning.json: chapter 7's question in both modes;
- lab/recorded.json, eval/smollm2-cpu.json, floor/recorded.json, profile/<lang>-next.json:
  the lab, the evaluation, the serving floor and the Speed chapter's profile.
Each is read once per process (a missing or unreadable file reads as None where the page can do
without it). Every reading is handed out as a copy: the traces by `handed_out` (each visitor's state
gets its own, which their views may write to: a step's logit lens, filled in where it is shown), the
lab, evaluation, floor and profile as deep copies (a few milliseconds: the profile's 180 KB took 7 ms
here), so what one visitor's state or view does to its copy never reaches the cached reading, which
stays as the file says for every visitor after them. examples.json holds the prompt box's examples and page.css the page's own styles.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from functools import lru_cache
from pathlib import Path

from engine.errors import EngineError
from engine.schema.floor import Floor
from engine.schema.floor_check import read_floor
from engine.schema.trace import Trace
from viz.text import strings
from viz.text.strings import LANGS

ASSETS = Path(__file__).resolve().parents[2] / "assets"
KINDS = ("next", "normal", "reasoning")


def _json(*parts: str):
    """A recorded JSON file, or None if the host removed it (or it does not parse)."""
    try:
        return json.loads(ASSETS.joinpath(*parts).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def recorded(lang: str) -> dict[str, Trace]:
    """The walkthrough's recordings in `lang`: "next" (the next-token example, raw text, for
    chapters 1-5 and 8) and "normal" / "reasoning" (one built-in question, for chapter 7). A new
    dict of copies each call: what a visitor's views do to theirs never reaches the next visitor."""
    return {kind: handed_out(trace) for kind, trace in _read(lang).items()}


@lru_cache(maxsize=4)
def _read(lang: str) -> dict[str, Trace]:
    return {kind: Trace.from_json(recording_file(lang, kind).read_text(encoding="utf-8")) for kind in KINDS}


def handed_out(trace: Trace) -> Trace:
    """A copy of a cached trace that a visitor's state may hold and its views write to: the trace,
    its parts and every step are its own objects, every list the page appends to its own list.
    What nothing writes to is shared, not copied: the packed attention, the candidates (a deep copy
    of the three recordings took ~1 s here; this takes well under a millisecond a trace)."""
    own = {name: dataclasses.replace(part) for name in ("model", "settings", "prompt", "prefill", "summary",
                                                       "observation", "reasoning")
           if dataclasses.is_dataclass(part := getattr(trace, name))}
    attention = trace.attention and dataclasses.replace(trace.attention, prefill=list(trace.attention.prefill),
                                                         steps=list(trace.attention.steps))
    return dataclasses.replace(trace, **own, attention=attention, steps=[dataclasses.replace(s) for s in trace.steps],
                               branches=[dataclasses.replace(b, steps=list(b.steps)) for b in trace.branches])


def recording_file(lang: str, kind: str = "next") -> Path:
    """A recording's trace file (the download box shows it while the chapters show the recording)."""
    return ASSETS / "traces" / f"{lang}-{kind}.json"


def is_recording(trace) -> bool:
    """Whether a trace is one of the walkthrough's next-token recordings (what the chapters show before a run)."""
    return any(trace.created == r.created and trace.prompt.raw == r.prompt.raw
               for lang in LANGS for r in (_read(lang)["next"],))


def prompt_of(lang: str, kind: str = "next") -> str:
    """The next-token example ("next") or chapter 7's question ("question") in `lang`."""
    return strings.walkthrough()["prompt"][kind][lang]


def lab() -> dict | None:
    """The lab as recorded with `python -m engine lab` (lab/recorded.json): a copy of its own."""
    return copy.deepcopy(_lab())


@lru_cache(maxsize=1)
def _lab() -> dict | None:
    return _json("lab", "recorded.json")


EVALUATION = ASSETS / "eval" / "smollm2-cpu.json"


def evaluation() -> dict | None:
    """The evaluation recorded with `python -m engine eval`, as chapter 7 opens on it: a copy of its own."""
    return copy.deepcopy(_evaluation())


@lru_cache(maxsize=1)
def _evaluation() -> dict | None:
    return _json("eval", EVALUATION.name)


def floor() -> Floor | None:
    """The serving floor's recorded workload (floor/recorded.json), read as an upload is: a copy of its own."""
    return copy.deepcopy(_floor())


@lru_cache(maxsize=1)
def _floor() -> Floor | None:
    try:
        return read_floor((ASSETS / "floor" / "recorded.json").read_text(encoding="utf-8"))
    except (OSError, EngineError):
        return None


def profile(lang: str) -> dict | None:
    """The recording's profile for the page's language (profile/<lang>-next.json): a copy of its own."""
    return copy.deepcopy(_profile(lang))


@lru_cache(maxsize=4)
def _profile(lang: str) -> dict | None:
    """The profile, with the run's own pass times (`run_ms`, as a live profile carries them) read
    from the trace it replays, when that is the recording of the same run: the profile's gaps then
    say how the cards' times and the replay's differ."""
    found = _json("profile", f"{lang}-next.json")
    trace = _read(lang)["next"]
    if found and "run_ms" not in found and found.get("run_id") == trace.run_id and trace.prefill:
        step = found.get("decode_step")
        if isinstance(step, int) and 0 < step < len(trace.steps):
            found["run_ms"] = {"prefill": trace.prefill.ms, "decode": trace.steps[step].forward_ms}
    return found


@lru_cache(maxsize=1)
def examples() -> list:
    """The prompt box's examples."""
    return _json("examples.json") or []


@lru_cache(maxsize=1)
def page_css() -> str:
    """The page's own styles (beside viz's, viz/html/css.py)."""
    return (ASSETS / "page.css").read_text(encoding="utf-8")


def next_raw(lang: str) -> dict | None:
    """The next-token recording as plain JSON (what the catalogue's facts are read from)."""
    return _json("traces", f"{lang}-next.json")
