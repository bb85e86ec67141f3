"""A draw every visitor gets alike is made once and handed out as the page would send it."""

import json

import altair as alt
import gradio as gr
import pandas as pd

from ui.page.plot import Plot
from ui.page.same_draw import SameDraws


def chart():
    return alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_bar().encode(x="x:Q", y="y:Q").properties(width=400)


def test_a_draw_is_made_once_per_key_and_handed_out_as_sent():
    draws, made = SameDraws(), []

    def draw():
        made.append(1)
        return ["text", chart(), gr.update(value=3, visible=True)]
    first = draws.get(("en", False), draw)
    first[2].pop("value")                           # what Gradio does to an update dict as it sends it
    second = draws.get(("en", False), draw)
    assert len(made) == 1
    assert second[0] == "text" and second[2]["value"] == 3
    assert json.loads(second[1].plot) == json.loads(Plot().postprocess(chart()).plot)
    assert Plot().postprocess(second[1]) is second[1]                     # the box sends it as it is
    draws.get(("zh", False), draw)
    assert len(made) == 2


def test_a_dict_of_views_an_unhashable_key_and_the_bound():
    draws, made = SameDraws(kept=2), []

    def draw():
        made.append(1)
        return {"a": chart(), "b": gr.update(visible=False)}
    views = draws.get("en", draw)
    assert set(views) == {"a", "b"} and views["b"] == {"__type__": "update", "visible": False}
    draws.get(["not", "hashable"], draw)
    draws.get(["not", "hashable"], draw)
    assert len(made) == 3                            # drawn anew each time, never kept
    draws.get("zh", draw)
    draws.get("fr", draw)                            # the oldest ("en") goes
    draws.get("en", draw)
    assert len(made) == 6 and len(draws.draws) == 2
