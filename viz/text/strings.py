"""The one string catalogue: every word the app shows, in English and Simplified Chinese.

    assets/strings/page.json         the page's components (through gr.I18n, ui/page/i18n.py)
    assets/strings/walkthrough.json  the walkthrough's prompts and its steps (their number is the step count)
    assets/strings/charts.json       what viz draws: charts, tables, HTML panels (sections
                                     "charts", "lab", "reasoning"; keys unique across them)
    assets/strings/verdicts.json     sentences that say what a figure shows (sections by chapter,
                                     merged with charts.json): each claim and its opposite, chosen
                                     from the figure (viz/text/verdicts.py)
    assets/strings/floor.json        what the serving floor's charts and sentences say (merged like charts.json)
    assets/strings/errors.json       what a visitor reads when something is refused (err_<key>:
                                     an EngineError's `key`, or a refusal of ui/; ui/host/errors.py)
    assets/strings/glossary.json     one term per concept in each language, and the variants
                                     that must not appear (tests/test_i18n.py checks every text)

Each entry is {"en": ..., "zh": ...}; `{placeholders}` are filled by the caller.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "assets" / "strings"
LANGS = ("en", "zh")


def said(entry: dict[str, str], lang: str) -> str:
    """One catalogue entry in `lang`; English where that language has no text (the one fallback)."""
    return entry.get(lang) or entry["en"]


def page_text(key: str, lang: str) -> str:
    """A page string (page.json, the walkthrough's steps) in `lang`, its placeholders unfilled."""
    return said(page()[key], lang)


def _read(name: str):
    return json.loads((FOLDER / name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def charts() -> dict[str, dict[str, str]]:
    """The viz labels and verdicts, their sections merged (a key in two sections is a bug)."""
    merged: dict[str, dict[str, str]] = {}
    for name in ("charts.json", "verdicts.json", "floor.json"):
        if not (FOLDER / name).exists():
            continue
        for section, entries in _read(name).items():
            clash = merged.keys() & entries.keys()
            if clash:
                raise ValueError(f"{name}: keys {sorted(clash)} of section {section!r} are already used")
            merged.update(entries)
    return merged


@lru_cache(maxsize=1)
def walkthrough() -> dict:
    return _read("walkthrough.json")


def step_count() -> int:
    """How many steps the walkthrough has: its catalogue's list of steps is the one count."""
    return len(walkthrough()["steps"])


@lru_cache(maxsize=1)
def page() -> dict[str, dict[str, str]]:
    """The page's strings: page.json plus the walkthrough's step titles, one-line introductions
    (also the top line of each Explore chapter), texts and legends (what each chapter's numbers
    are: measured, formula or projection) and, for some steps, the details under the narration that
    a projector leaves out (wt_<i>_title/_intro/_text/_legend/_more)."""
    strings = dict(_read("page.json"))
    for i, step in enumerate(walkthrough()["steps"]):
        for part in ("title", "intro", "text", "legend", "more"):
            if part in step:           # "more": the details a projector leaves out (some steps)
                strings[f"wt_{i}_{part}"] = step[part]
    return strings


@lru_cache(maxsize=1)
def errors() -> dict[str, dict[str, str]]:
    """The refusals a visitor can meet, by `err_<key>`."""
    return _read("errors.json")


@lru_cache(maxsize=1)
def glossary() -> list[dict]:
    return _read("glossary.json")


def every_text() -> dict[str, dict[str, str]]:
    """Every entry of the catalogue by a unique name ("page:key", "charts:key", "errors:err_key", ...)."""
    texts = {f"page:{k}": v for k, v in page().items()}
    texts.update({f"charts:{k}": v for k, v in charts().items()})
    texts.update({f"errors:{k}": v for k, v in errors().items()})
    texts.update({f"walkthrough:prompt:{k}": v for k, v in walkthrough()["prompt"].items()})
    return texts
