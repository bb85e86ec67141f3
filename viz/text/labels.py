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
