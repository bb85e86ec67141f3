"""Charts out (issue 31): SVG and PNG drawn on the server by vl-convert, titles and axes in the page's
language, slide-sized; the HTML cards as pictures; the deck one self-contained file."""

import re
import struct

import pytest

from engine.schema.trace import Trace
from tests.paths import ROOT
from viz.charts import decode, speed
from viz.out import export
from viz.out.deck import CSP, Slide, deck_html
from viz.text.labels import label
from viz.out.slides import speed_cards_chart, text_width, token_chips_chart, wrap


def recording(lang: str) -> Trace:
    return Trace.from_json((ROOT / "assets" / "traces" / f"{lang}-next.json").read_text(encoding="utf-8"))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_exported_svg_carries_the_chart_title_and_axes_in_the_page_language(lang):
    trace = recording(lang)
    spec = export.slide(speed.timeline_chart(trace, lang=lang))
    svg = export.svg(spec)
    assert label("timeline_title", lang) in svg          # the title, as text (searchable, editable)
    assert label("ms_axis", lang) in svg        # the x axis
    assert re.search(r'<svg[^>]* width="1280" height="720"', svg), svg[:200]     # a 16:9 slide
    assert png_size(export.png(spec)) == (1920, 1080)


def test_the_other_language_is_not_in_the_export():
    zh = export.svg(export.slide(decode.candidates_chart(recording("zh"), 3, lang="zh")))
    assert "概率" in zh and "probability" not in zh


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cards_as_pictures_show_the_run_figures(lang):
    trace = recording(lang)
    cards = export.svg(export.slide(speed_cards_chart(trace, lang), fit=False))
    assert label("slide_speed_title", lang) in cards and label("ttft", lang) in cards
    assert f"{trace.summary.ttft_ms:.0f} ms" in cards or f"{trace.summary.ttft_ms:.1f} ms" in cards
    chips = export.svg(export.slide(token_chips_chart(trace, lang), fit=False))
    assert label("slide_tokens_title", lang, n=len(trace.prompt.tokens)) in chips
    assert all(str(t.id) in chips for t in trace.prompt.tokens)
    if lang == "zh":     # byte pieces sit under the character they form, as on the page
        assert "苹" in chips


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_card_says_its_whole_definition_in_the_picture(lang):
    """Issue 48 item 7: the TTFT card's definition was cut after seven lines in the exported PNG."""
    from viz.html.cards import speed_figures
    trace = recording(lang)
    chart = speed_cards_chart(trace, lang).to_dict()
    drawn = " ".join(str(row["text"]) for layer in chart["layer"][1:]
                     for row in chart["datasets"][layer["data"]["name"]])
    for name, _, definition, _ in speed_figures(trace, lang)[0]:
        assert "".join(definition.split()) in "".join(drawn.split()), (name, definition)


def test_wrap_keeps_words_and_breaks_chinese_by_character():
    assert wrap("one two three four", 10, 45) == ["one two", "three", "four"]
    lines = wrap("从发出请求到第一个token就绪", 10, 40)
    assert "".join(lines) == "从发出请求到第一个token就绪" and len(lines) > 1
    assert all(text_width(line, 10) <= 40 for line in lines) and "token" in "".join(lines[-2:])


def test_the_deck_is_one_file_that_asks_nothing_of_the_network():
    chart = speed.timeline_chart(recording("en"), lang="en")
    page = deck_html([Slide("Cover", text="<script>alert(1)</script> **bold**"),
                      Slide("Speed", charts=[chart], numbers=[("TTFT", "91 ms")])], "en", "Deck", "foot", "keys")
    assert CSP in page and "default-src 'none'" in page
    assert page.count('<section class="slide') == 2 and page.count("<svg") >= 1
    assert "<script>alert" not in page and "<strong>bold</strong>" in page       # a trace's text is escaped
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", page)
    assert label("timeline_title", "en") in page


def test_a_link_keeps_zero_values_and_leaves_out_empty_ones():
    from ui.share.links import link
    url = link("http://h/", open="explore", step=0, top_k=0, branch="", present="", lang="zh")
    assert url == "http://h/?open=explore&step=0&top_k=0&lang=zh"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_chapter_download_of_a_branch_carries_the_branch_cards(lang):
    """The Speed chapter's download while a branch is on show: its cards are the branch's (as on the
    page), not the run's prefill and TTFT."""
    from tests.unit.test_branch_timeline import forked
    from ui.share.charts_out import chapter_files
    trace, branch = forked("trace_en_sampled.json" if lang == "en" else "trace_zh.json")
    run_svg, branch_svg = (export.svg(export.slide(speed_cards_chart(trace, lang, b), fit=False)) for b in (None, branch))
    assert label("prefill_rate", lang) in run_svg and label("prefill_rate", lang) not in branch_svg
    assert label("branch_reused", lang) in branch_svg
    paths = chapter_files("speed", [], trace, lang, branch=branch)
    drawn = next(p for p in paths if p.endswith(".svg"))
    assert label("branch_reused", lang) in open(drawn, encoding="utf-8").read()
