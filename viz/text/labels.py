"""Every word viz puts on screen, in English and Simplified Chinese (from the string catalogue,
assets/strings/charts.json; see viz/text/strings.py).

`label(key, lang, **values)` looks a key up and fills `{placeholders}`; an unknown language falls
back to English, an unknown key is a bug (KeyError). A test checks that every key has both.
"""

from __future__ import annotations

from viz.text.strings import LANGS, charts, said  # noqa: F401 (LANGS: re-exported)

LABELS: dict[str, dict[str, str]] = charts()


def label(key: str, lang: str = "en", **values: object) -> str:
    """The text for `key` in `lang` ("en" or "zh"), with `{placeholders}` filled from `values`."""
    text = said(LABELS[key], lang)
    return text.format(**values) if values else text


def progress(fraction: float, what: str, lang: str = "en") -> str:
    """A measurement's progress line, "Measuring… 40% · what it does now" (no " · " when nothing
    is named; plain text: a Markdown emphasis around it showed its asterisks when `what` was empty)."""
    pct = f"{fraction:.0%}"
    what = str(what or "").strip()
    return label("in_progress", lang, pct=pct, what=what) if what else label("in_progress_bare", lang, pct=pct)
