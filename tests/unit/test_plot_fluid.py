"""The page's chart box (ui/page/plot.py, issue 39's phone): a chart with a plain width carries the
patch that fits it to a narrower box; compositions, step widths and maps that keep their width are
left as they are; the patch is added once; the chart's own usermeta survives; the box keeps the
settings it was made with (Gradio reads them from the class's __init__)."""

import json

import altair as alt
import pandas as pd
import vl_convert

import viz  # noqa: F401  (the theme)
from ui.page.plot import BOX, HOOK, PLOT_JS, Plot, fluid
from viz.charts.notice import NOTICE, notice_chart
from viz.charts.theme import KEEP_WIDTH
from viz.out import export

FRAME = pd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})


def bars(**props):
    return alt.Chart(FRAME).mark_bar().encode(x="x:Q", y="y:N").properties(**props)


def patch_of(spec: dict) -> list | None:
    return ((spec.get("usermeta") or {}).get("embedOptions") or {}).get("patch")


def signals_of(spec: dict) -> dict:
    """{signal name: its update} the patch adds; the title's limit under '/title/limit'."""
    out = {}
    for op in patch_of(spec):
        value = op["value"]
        out[value["name"] if op["path"] == "/signals/-" else op["path"]] = value.get("update") or value.get("signal")
    return out


def test_a_chart_with_a_plain_width_is_fitted_to_a_narrow_box_only():
    ops = signals_of(fluid(bars(width=520, title="A title").to_dict()))
    assert set(ops) == {BOX, "width", "autosize", "/title/limit"}
    # narrower than the plot plus room for its axes: the box's width; otherwise its own 520
    assert "< 740" in ops["width"] and ops["width"].endswith(": 520")
    assert "fit-x" in ops["autosize"] and "'pad'" in ops["autosize"]


def test_the_box_is_read_again_at_each_resize_and_a_hidden_box_is_no_box():
    """Issue 48: a chart drawn while its chapter was hidden (a box 0 px wide) came back 12 px wide
    for good. The box's width is read again at every window resize (the page raises one when a
    chart's box changes width), and a box of no width keeps the chart's own width."""
    box = next(op["value"] for op in patch_of(fluid(bars(width=520).to_dict())) if op["value"].get("name") == BOX)
    assert [on["events"] for on in box["on"]] == ["window:resize"] and box["on"][0]["update"] == box["init"]
    width = signals_of(fluid(bars(width=520).to_dict()))["width"]
    assert width.startswith(f"(({BOX} > 0 &&") or width.startswith(f"({BOX} > 0 &&"), width
    assert "ResizeObserver" in PLOT_JS and "dispatchEvent(new Event('resize'))" in PLOT_JS


def test_the_compiled_vega_has_the_signal_list_the_patch_adds_to():
    """The patch adds to the compiled Vega's signals: the chart's own parameter makes the list, beside
    the chart's own parameters (a hover selection keeps working)."""
    hover = alt.selection_point(fields=["y"], on="pointerover")
    for chart in (bars(width=520), bars(width=520).add_params(hover) + bars(width=520).mark_text()):
        names = [s["name"] for s in vl_convert.vegalite_to_vega(fluid(chart.to_dict()))["signals"]]
        assert HOOK in names


def test_a_fitted_chart_keeps_its_autosize_and_is_narrowed_below_its_own_width():
    chart = bars(width=600, height=300, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    ops = signals_of(fluid(chart.to_dict()))
    assert set(ops) == {BOX, "width"} and "< 600" in ops["width"]


def test_compositions_steps_and_kept_widths_are_left_alone():
    left = bars(width=200)
    for spec in (alt.hconcat(left, left).to_dict(), bars(width=alt.Step(20)).to_dict(),
                 bars(width=300, usermeta={KEEP_WIDTH: True}).to_dict(), bars().to_dict()):
        assert patch_of(fluid(spec)) is None


def test_the_patch_is_added_once_and_the_charts_usermeta_survives():
    spec = notice_chart("a notice").to_dict()
    once = fluid(spec)
    assert fluid(once) is once
    assert once["usermeta"][NOTICE] is True and patch_of(once)
    assert spec.get("usermeta", {}).get("embedOptions") is None        # the caller's spec is not changed


def test_the_patched_spec_still_compiles_and_draws_at_its_own_width():
    """vl-convert (files made from a chart) ignores the patch: the chart keeps its width there."""
    spec = fluid(bars(width=520, title="A title").to_dict())
    assert vl_convert.vegalite_to_vega(spec)["width"] == 520
    assert export.svg(spec).startswith("<svg")


def test_the_box_patches_what_it_shows_and_keeps_its_settings():
    box = Plot(show_label=False, elem_id="candidates", min_width=320)
    data = box.postprocess(bars(width=520))
    assert patch_of(json.loads(data.plot))
    props = box.get_config()
    assert props["elem_id"] == "candidates" and props["min_width"] == 320 and props["show_label"] is False
    assert box.postprocess(None) is None



def test_the_box_sends_the_spec_altair_validates_without_validating_it_again():
    """The page skips Altair's schema check at each draw; what it sends is the checked spec, patched."""
    for chart in (bars(width=520, title="A title"), alt.layer(bars(width=300), bars(width=300)),
                  alt.hconcat(bars(width=200), bars(width=200))):
        sent = json.loads(Plot().postprocess(chart).plot)
        assert sent == json.loads(json.dumps(fluid(json.loads(chart.to_json(validate=True)))))
