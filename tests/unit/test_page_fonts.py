"""The page's typeface comes from local, complete faces (ui/page/fonts.py): no semibold text drawn letter
by letter from a fallback face, and nothing fetched from a font service."""

from __future__ import annotations

import re

from ui.page import fonts


def test_every_weight_of_the_family_is_a_local_face():
    css = fonts.font_css()
    weights = re.findall(r"font-weight: (\d+)", css)
    assert sorted(set(weights)) == ["400", "600", "700"]
    assert "http" not in css                        # no font service at run time
    # the semibold faces are the shipped files, inlined, with the ranges they hold
    assert css.count("data:font/woff2;base64,") == len(fonts.SEMIBOLD) == 2
    for name in fonts.SEMIBOLD:
        assert (fonts.FONTS / name).stat().st_size > 10_000       # a whole alphabet, not a few glyphs
    assert (fonts.FONTS / "OFL.txt").read_text().startswith("Copyright") or "Open Font License" in (
        fonts.FONTS / "OFL.txt").read_text()


def test_the_theme_names_only_the_page_family_and_system_faces():
    theme = fonts.theme()
    assert theme.font.startswith(f"'{fonts.FAMILY}'") or theme.font.startswith(fonts.FAMILY)
    assert "Source Sans Pro" not in theme.font        # Gradio's partial semibold face is never asked for
    faces = theme._get_theme_css()
    assert "SemiBold" not in faces and "Source Sans Pro" not in faces      # only complete files are declared
