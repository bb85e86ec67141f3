"""The page's words in English and Simplified Chinese, through Gradio's own gr.I18n.

Gradio picks the language from the browser (its Settings panel at the foot of the page switches
it) and sets <html lang>. Charts and HTML drawn by viz/ are made on the server, so a small script
(`LANG_SYNC_JS`) reports the page's language into a gr.State whenever <html lang> changes.
"""

from __future__ import annotations

from functools import lru_cache

import gradio as gr

from engine.served.load import LEVELS
from viz.text import facts as page_facts
from viz.text import strings
from viz.text.strings import LANGS  # noqa: F401 (the one list of languages; re-exported)

from ui.host import recordings


@lru_cache(maxsize=2)
def facts(lang: str) -> dict[str, str]:
    """The numbers the fixed texts quote (`{prompt_tokens}`, `{kv_heads}`, `{floor}`, ...): from the
    recording the page opens on, its model's config, the recorded lab and profile (viz/text/facts.py), never
    written into the catalogue."""
    return {**page_facts.page_facts(recordings.next_raw(lang), recordings.lab(), lang, recordings.profile(lang)),
            "load_levels": ("、" if lang == "zh" else ", ").join(map(str, LEVELS))}


STRINGS = strings.page()     # assets/strings/page.json + walkthrough.json (viz/text/strings.py)


def _filled(lang: str) -> dict[str, str]:
    return {k: page_facts.fill(v[lang], facts(lang)) for k, v in STRINGS.items()}


I18N = gr.I18n(**{lang: _filled(lang) for lang in LANGS},
               # browsers report regional tags; map the Chinese ones to our Simplified text
               **{tag: _filled("zh") for tag in ("zh-CN", "zh-SG")})


def t(key: str):
    """A translatable text for a component (label, value, button)."""
    if key not in STRINGS:
        raise KeyError(f"no translation for {key!r}")
    return I18N(key)


def text(key: str, lang: str) -> str:
    """The plain string, for text built on the server."""
    return strings.said(STRINGS[key], lang)


def lang_of(locale: str | None) -> str:
    return "zh" if str(locale or "").lower().startswith("zh") else "en"


# Reports {lang, present} now and whenever <html lang> changes (Gradio's language switch).
LANG_SYNC_JS = """
const present = new URLSearchParams(window.location.search).get('present') === '1';
if (present) document.body.classList.add('tbt-present');
const report = () => trigger('change', {
  lang: document.documentElement.lang || navigator.language || 'en', present: present,
});
new MutationObserver(report).observe(document.documentElement, {attributes: true, attributeFilter: ['lang']});
report();
"""

# The end of a first draw in a language (app.py's chain after each report above): <body data-tbt-drawn>
# holds the <html lang> the whole page is now drawn in. Until then a late step of that chain may still
# update a component the visitor acted on (a validation message under the prompt goes with it).
DRAWN_JS = "() => { document.body.dataset.tbtDrawn = document.documentElement.lang || 'en'; }"

