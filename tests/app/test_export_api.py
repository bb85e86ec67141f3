"""/export (issue 31): one chart of a trace file as SVG or PNG, in the language asked; a wrong name,
format or language answered with a message that names it."""

from pathlib import Path

import pytest
from gradio_client import handle_file

from tests.paths import ROOT
from viz.text.labels import label

TRACE = str(ROOT / "assets" / "traces" / "zh-next.json")


def test_export_draws_a_chart_in_the_language_asked(client):
    svg = client.predict(trace=handle_file(TRACE), chart="candidates", format="svg", lang="zh", step=3,
                         api_name="/export")
    text = Path(svg).read_text(encoding="utf-8")
    assert text.lstrip().startswith("<svg") and label("probability", "zh") in text
    png = client.predict(trace=handle_file(TRACE), chart="speed_cards", format="png", lang="en", api_name="/export")
    data = Path(png).read_bytes()
    assert data[:4] == b"\x89PNG" and len(data) > 10_000


@pytest.mark.parametrize("args, words", [
    ({"chart": "pie"}, "no chart named"), ({"format": "gif"}, "svg or png"), ({"lang": "fr"}, "en or zh")])
def test_export_refuses_what_it_cannot_draw(client, args, words):
    with pytest.raises(Exception) as refused:
        client.predict(trace=handle_file(TRACE), **{"chart": "timeline", **args}, api_name="/export")
    assert words in str(refused.value).lower() or words in str(refused.value)
