"""The specs Altair writes are of the Vega-Lite the page draws them with.

Gradio's page bundles its own Vega-Lite (gr.Plot renders an Altair chart with it). A spec of a newer
major version is drawn anyway, with only a console warning, and some of it can go missing: under
Altair 6 (Vega-Lite 6 specs) chapter 3's "KV cache at longer contexts" drew no bars on a Vega-Lite 5
page. tests/browser/test_charts_drawn.py checks the drawn marks themselves."""

import re
from pathlib import Path

import altair as alt
import gradio

ASSETS = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"


def page_vega_lite() -> tuple[int, int]:
    """The Vega-Lite version inside Gradio's plot component (its package.json, bundled)."""
    for path in ASSETS.glob("AltairPlot-*.js"):
        found = re.search(r'name:`vega-lite`,[^}]*?version:`(\d+)\.(\d+)\.\d+`', path.read_text(encoding="utf-8"))
        if found:
            return int(found[1]), int(found[2])
    raise AssertionError(f"no Vega-Lite version found in {ASSETS}/AltairPlot-*.js (did Gradio change its bundle?)")


def spec_vega_lite() -> tuple[int, int]:
    found = re.search(r"/v(\d+)\.(\d+)\.\d+\.json$", alt.SCHEMA_URL)
    return int(found[1]), int(found[2])


def test_altair_writes_the_vega_lite_the_page_draws():
    page, spec = page_vega_lite(), spec_vega_lite()
    # same major version, and not newer than the page's: a newer spec's features are unknown to it
    assert spec[0] == page[0] and spec <= page, f"Altair writes Vega-Lite {spec}, the page draws with {page}"


def test_a_chart_says_its_version():
    import viz  # noqa: F401  (the theme)
    spec = alt.Chart().mark_bar().to_dict()
    assert spec["$schema"] == alt.SCHEMA_URL
