"""Every chart of every Explore chapter, en and zh, on a phone, drawn as the page draws it: each data mark
its spec declares shows on the page's canvas (tests/browser/marks.py counts them; on a desktop,
tests/browser/test_browser.py's walk of every chapter counts them), and on a
phone (390×844, touch) a chart with a plain width takes its column's width (ui/page/plot.py), a
composition of panels scrolls inside its box from its left edge, no table widens the page, and every
chapter's tab can be reached. Issue 39: chapter 3's projection drew no bars (a Vega-Lite version mismatch and an
opacity on an unsorted field), and phone charts were cut on both sides."""

import json

import pytest

from tests.browser.controls import first_draw
from tests.browser.marks import expose_views, missing, plots_ready

LOCALES = {"en": "en-US", "zh": "zh-CN"}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1400, "height": 1000}}
TABS_JS = "() => [...document.querySelectorAll('#explore-chapters [role=tab]')].map((b) => b.innerText.trim())"
# the page's own width against the window's: anything wider lets the page scroll (or cut) sideways
PAGE_WIDTH_JS = "() => [document.documentElement.scrollWidth, window.innerWidth]"
# every paragraph of explanation in sight (30+ characters) and its width (issue 48: a note beside a
# button was 14 px wide, one glyph a line)
NARROW_TEXT_JS = """() => [...document.querySelectorAll('#explore-chapters .prose p, #explore-chapters .md p')]
  .filter((el) => el.offsetParent && el.innerText.trim().length >= 30)
  .map((el) => [el.closest('[id]')?.id ?? '', Math.round(el.getBoundingClientRect().width), el.innerText.slice(0, 24)])
  .filter(([, width]) => width < 240)"""


def open_page(browser, app_url, lang: str, form: dict):
    context = browser.new_context(locale=LOCALES[lang], **form)
    page = context.new_page()
    expose_views(page)
    page.goto(app_url)
    first_draw(page, timeout_ms=60_000)
    return context, page


def fits(plot: dict) -> bool:
    """Whether the page fits this chart to its box (the patch ui/page/plot.py adds to its spec)."""
    meta = json.loads(plot["spec"] or "{}").get("usermeta") or {}
    return "patch" in (meta.get("embedOptions") or {})


def each_chapter(page):
    """Click every chapter tab in turn (each must be visible: no tab hidden behind an overflow button)."""
    for i, name in enumerate(page.evaluate(TABS_JS)):
        tab = page.locator("#explore-chapters [role=tab]").nth(i)
        assert tab.is_visible(), f"the chapter tab {name!r} cannot be reached"
        tab.click()
        yield name


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_phone_shows_every_chapter_within_its_width(browser, app_url, shots, lang):
    context, page = open_page(browser, app_url, lang, PHONE)
    try:
        wide, lost, fitted, squeezed = {}, {}, 0, {}
        for n, name in enumerate(each_chapter(page), 1):
            window = page.evaluate("() => window.innerWidth")
            for plot in plots_ready(page):
                # a chart the page fits to its box (ui/page/plot.py) takes the box's width: no scrolling
                if fits(plot):
                    fitted += 1
                    if plot["drawn"] > plot["width"] + 1:
                        wide[f"{name} #{plot['id']} (fitted)"] = (round(plot["drawn"]), round(plot["width"]))
                # the box within the window; the drawing starts in it (not cut on the left) and, where
                # it is wider, the box scrolls to all of it
                cut = plot["left"] < -1 or plot["right"] > window + 1 or plot["drawnLeft"] < plot["left"] - 1 or (
                    plot["drawn"] > plot["width"] + 1 and not (plot["scrolls"] and plot["reach"] >= plot["drawn"]))
                if cut:
                    wide[f"{name} #{plot['id']}"] = {k: round(plot[k]) for k in ("left", "right", "drawnLeft", "drawn")}
                if gone := missing(plot):
                    lost[f"{name} #{plot['id']}"] = gone
            if narrow := page.evaluate(NARROW_TEXT_JS):
                squeezed[name] = narrow
            scroll, window = page.evaluate(PAGE_WIDTH_JS)
            if scroll > window:
                wide[f"{name} (the page)"] = (scroll, window)
            page.screenshot(path=str(shots / f"phone-{lang}-{n}.png"), full_page=True)
        assert fitted >= 14, f"only {fitted} charts were fitted to a phone's column"
        assert not wide, f"cut or wider than the window on a phone (px): {wide}"
        assert not lost, f"marks declared but not drawn on a phone: {lost}"
        assert not squeezed, f"explanations narrower than 240 px on a phone: {squeezed}"
    finally:
        context.close()


def test_the_floor_charts_draw_without_a_vega_warning(browser, app_url):
    """Issue 39: the floor's ways chart logged "Conflicting scale property range" (a yOffset beside a
    fixed height) in the page's console. The serving floor's charts draw with no Vega warning."""
    context = browser.new_context(locale=LOCALES["en"], **DESKTOP)
    page = context.new_page()
    said = []
    page.on("console", lambda m: said.append(f"{m.type}: {m.text}"))
    expose_views(page)
    try:
        page.goto(app_url)
        first_draw(page, timeout_ms=60_000)
        page.get_by_role("tab", name="9 · Serving floor").click()
        page.wait_for_function("() => document.querySelector('#floor-modes [data-testid=altair]')?.querySelector('div')?.__tbtView", timeout=60_000)
        plots_ready(page)
        vega = [m for m in said if "conflicting" in m.lower() or "vega" in m.lower() or "scale" in m.lower()]
        assert not vega, vega
    finally:
        context.close()
