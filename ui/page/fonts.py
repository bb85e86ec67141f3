"""The page's typeface, from local files only (no font service is reached at run time).

Gradio's default theme declares Source Sans Pro at 400 and 600, and the 600 file it ships is a
subset of a few dozen glyphs without the Latin letters: semibold text (titles, card figures, tab
labels, bold Markdown) came out letter by letter from a fallback face ("ʙefore", "SDPᴀ"). The
page uses its own family name instead, so that every weight comes from one complete face:

- 400 and 700: Gradio's own Source Sans Pro Regular and Bold, which are complete, served by Gradio
  itself (`static/fonts/...`, the path its theme uses);
- 600: Source Sans Pro SemiBold, Latin and Latin Extended, shipped in assets/fonts/ (from the
  @fontsource/source-sans-pro package, SIL Open Font License: assets/fonts/OFL.txt), inlined here
  as data, so no route has to serve it.

Characters none of them holds (Chinese, arrows) come from the system's faces, as before: Noto Sans
CJK for Chinese (Debian's fonts-noto-cjk). The monospace family is Gradio's IBM Plex Mono without
its partial semibold (`theme`).
"""

from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path

import gradio as gr

FAMILY = "Token Sans"
FONTS = Path(__file__).resolve().parents[2] / "assets" / "fonts"
GRADIO_FONTS = "static/fonts/SourceSansPro"          # served by Gradio, relative to the page
# the shipped semibold files and the characters each holds (fontsource's own ranges)
SEMIBOLD = {
    "source-sans-pro-latin-600-normal.woff2":
        "U+0000-00FF,U+0131,U+0152-0153,U+02BB-02BC,U+02C6,U+02DA,U+02DC,U+0304,U+0308,U+0329,"
        "U+2000-206F,U+2074,U+20AC,U+2122,U+2191,U+2193,U+2212,U+2215,U+FEFF,U+FFFD",
    "source-sans-pro-latin-ext-600-normal.woff2":
        "U+0100-02AF,U+0304,U+0308,U+0329,U+1E00-1E9F,U+1EF2-1EFF,U+2020,U+20A0-20AB,U+20AD-20CF,"
        "U+2113,U+2C60-2C7F,U+A720-A7FF",
}
STACK = (FAMILY, "ui-sans-serif", "system-ui", "sans-serif")


def _face(weight: int, src: str, unicode_range: str = "") -> str:
    ranges = f" unicode-range: {unicode_range};" if unicode_range else ""
    return (f"@font-face {{ font-family: '{FAMILY}'; font-style: normal; font-weight: {weight}; "
            f"font-display: swap; src: {src};{ranges} }}")


@lru_cache(maxsize=1)
def font_css() -> str:
    """The family's @font-face rules."""
    faces = [_face(400, f"url('{GRADIO_FONTS}/SourceSansPro-Regular.woff2') format('woff2')"),
             _face(700, f"url('{GRADIO_FONTS}/SourceSansPro-Bold.woff2') format('woff2')")]
    for name, unicode_range in SEMIBOLD.items():
        data = base64.b64encode((FONTS / name).read_bytes()).decode("ascii")
        faces.append(_face(600, f"url(data:font/woff2;base64,{data}) format('woff2')", unicode_range))
    return "\n".join(faces)


def theme() -> gr.themes.Base:
    """Gradio's default theme on the page's family. Its monospace family keeps Gradio's IBM Plex
    Mono, at 400 and 700 only: the 600 file Gradio ships is partial too, and semibold code then
    takes the complete Bold."""
    # Font objects, not plain names: Gradio's launch compares the theme's fonts with its built-in
    # themes' by `.name`, and a plain string there stops the server at launch
    mono = (gr.themes.LocalFont("IBM Plex Mono", weights=(400, 700)),
            *(gr.themes.Font(name) for name in ("ui-monospace", "Consolas", "monospace")))
    return gr.themes.Default(font=tuple(gr.themes.Font(name) for name in STACK), font_mono=mono)
