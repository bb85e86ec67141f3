"""What a newcomer sees first, in English and in Chinese (headless Chromium on the live app): the
views open on whole words and characters, never on byte pieces; the speed cards keep each figure
on one line and leave no card alone in a row; semibold text comes from one complete face; a fork
the engine would refuse is said in the fork panel, in the page's language. Screenshots land in
test-output/browser/polish-*.png."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.controls import first_draw
from tests.paths import FIXTURES

LOCALES = {"en": "en-US", "zh": "zh-CN"}
RECORDING = {"en": "recording", "zh": "录制"}
HEX = re.compile(r"^<[0-9A-F]{2}( [0-9A-F]{2})*>$")
CHAPTER = 2           # Explore's chapter tabs follow the two top tabs (Explore, Walkthrough)
TOKENS, DECODE, SPEED, SAMPLING, FILE = 0, 3, 4, 7, 9   # 8: the serving floor


def open_visitor(browser, app_url, lang: str):
    """A fresh tab on the app in `lang`, the recording drawn in it: (context, page)."""
    context = browser.new_context(locale=LOCALES[lang], viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(app_url)
    page.wait_for_function(
        f"() => document.querySelector('#output .tbt-recording')?.innerText.includes('{RECORDING[lang]}')",
        timeout=120_000)
    first_draw(page, lang)
    return context, page


@pytest.fixture(scope="module", params=["en", "zh"])
def reader(request, browser, app_url):
    """One tab per language for the tests that only look (they click chapter tabs and resize the
    window, then put the window back): a page load is ~5 s of CPU, and they would load 8. (page, lang)"""
    context, page = open_visitor(browser, app_url, request.param)
    try:
        yield page, request.param
    finally:
        context.close()


@pytest.fixture(params=["en", "zh"])
def visitor(request, browser, app_url):
    """A fresh tab of its own, for a test that changes what the page holds (an upload): (page, lang)."""
    context, page = open_visitor(browser, app_url, request.param)
    try:
        yield page, request.param
    finally:
        context.close()


def chapter(page, index: int, plots: list[str] = ()) -> None:
    page.get_by_role("tab").nth(CHAPTER + index).click()
    for selector in plots:
        page.wait_for_selector(f"{selector} .vega-embed .marks", timeout=30_000)


def test_the_views_open_on_whole_words_and_characters(reader, shots):
    page, lang = reader
    chapter(page, TOKENS, ["#embedding"])
    selected = page.locator("#prompt-chips .tbt-selected .tbt-text").first.inner_text()
    assert selected.strip() and not HEX.match(selected.strip()), selected
    neighbours = page.inner_text("#neighbors")
    assert "<E" not in neighbours.splitlines()[0], neighbours[:200]
    page.locator("#embedding").screenshot(path=str(shots / f"polish-{lang}-embedding.png"))
    chapter(page, SAMPLING, ["#playground"])
    # the step on show: most of its top ten candidates' probability is on whole characters or words
    chips = [c.rsplit("\n", 1) for c in page.locator("#survivors .tbt-surv-chips .tbt-surv").all_inner_texts()[:10]]
    mass = [(text.strip(), float(re.sub(r"[^\d.]", "", p) or 0)) for text, p in chips]
    assert sum(p for text, p in mass if not HEX.match(text)) >= 0.5 * sum(p for _, p in mass), mass


def cards_layout(page) -> dict:
    """Each speed card's top edge, and each figure's height against one line of its text."""
    return page.evaluate("""() => {
      const cards = [...document.querySelectorAll('#speed-cards .tbt-card')];
      const qty = [...document.querySelectorAll('#speed-cards .tbt-qty')].map(q => {
        const lh = parseFloat(getComputedStyle(q.closest('.tbt-card-value')).fontSize) * 1.6;
        return {text: q.innerText, height: q.getBoundingClientRect().height, line: lh};
      });
      return {tops: cards.map(c => Math.round(c.getBoundingClientRect().top)), qty};
    }""")


@pytest.mark.parametrize("width", [1280, 1000, 760])
def test_speed_cards_keep_figures_on_one_line_and_no_card_alone(reader, shots, width):
    page, lang = reader
    chapter(page, SPEED, ["#timeline"])         # (a narrow page folds some tabs into a menu)
    page.set_viewport_size({"width": width, "height": 800})
    try:
        speed_cards_fit(page, lang, width, shots)
    finally:                                    # the tab is shared: the next test finds its own width
        page.set_viewport_size({"width": 1280, "height": 800})


def speed_cards_fit(page, lang: str, width: int, shots) -> None:
    # laid out again at the new width: two animation frames after the resize
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    layout = cards_layout(page)
    for q in layout["qty"]:
        assert q["height"] <= q["line"], (lang, width, q)          # "0.717 / tok/s" would be two lines
    rows = {}
    for top in layout["tops"]:
        rows[top] = rows.get(top, 0) + 1
    if len(layout["tops"]) > 2:
        assert min(rows.values()) >= 2, (lang, width, rows)         # 7 cards: 4 + 3, never 6 + 1
    page.locator("#speed-cards").screenshot(path=str(shots / f"polish-{lang}-cards-{width}.png"))


def test_semibold_text_comes_from_one_complete_face(reader):
    page, _ = reader
    chapter(page, SPEED, ["#timeline"])
    family = page.evaluate("() => getComputedStyle(document.querySelector('#speed-cards .tbt-card-value')).fontFamily")
    assert family.startswith(("'Token Sans'", '"Token Sans"', "Token Sans")), family
    # the page's semibold face is loaded and holds the capitals ("ʙefore", "SDPᴀ" came from a partial one)
    assert page.evaluate("""async () => {
      await document.fonts.load("600 20px 'Token Sans'", "ABSDPAMiB");
      return [...document.fonts].some(f => f.family.includes('Token Sans') && f.weight === '600'
                                            && f.status === 'loaded');
    }""")


def test_a_refused_fork_is_said_in_the_fork_panel(visitor, shots, tmp_path):
    """A trace recorded with another model, uploaded and forked: the refusal stands under the
    fork's token box in the page's language; the prompt box and the status line stay as they were."""
    page, lang = visitor
    data = json.loads((FIXTURES / "trace_en_sampled.json").read_text(encoding="utf-8"))
    data["model"]["id"] = "other/Model-1B"
    path = tmp_path / "other-model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    chapter(page, FILE)
    page.set_input_files("#upload input[type=file]", str(path))
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=60_000)
    chapter(page, DECODE, ["#candidates"])
    page.click("#fork-run")
    words = {"en": "other/Model-1B; load that model", "zh": "来自 other/Model-1B；要分叉"}[lang]
    page.wait_for_function("(w) => document.querySelector('#fork').innerText.includes(w)", arg=words,
                           timeout=30_000)
    page.locator("#fork").screenshot(path=str(shots / f"polish-{lang}-fork-refused.png"))
    for where in ("#prompt", "#status"):       # no error painted where the visitor did not act
        assert page.locator(f"{where} .error").count() == 0, where
        assert words not in page.inner_text(where)
