"""Issue 48 item 1: a chart redrawn while its chapter or walkthrough step is out of sight is drawn at
its box's width when it comes into sight (it was drawn ~12 px wide in an empty frame, for good: a box
of no width was taken for a phone's narrow column). Each path that redraws hidden charts is taken
(a click on the fork tree's row, a fork, presenter mode's Run live and "Back to the recording"), then
every chapter or step is visited, in any order, and each chart's drawn width is held against its box.
Presenter mode's Run live is also seen streaming into the step on screen (it was a test of its own in
tests/browser/test_browser_walkthrough.py: one page and one live run serve both).
The fork's list is held to the step on show on the way (item 3): "Continue from here", untouched,
forks at the step on show, and Decode stays there (item 4)."""

import json

import pytest

from tests.browser.marks import drawn, expose_views
from tests.browser.controls import first_draw

LOCALES = {"en": "en-US", "zh": "zh-CN"}
FORMS = {"desktop": {"viewport": {"width": 1400, "height": 1000}},
         "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}}
TABS = "#explore-chapters [role=tab]"
READY_JS = """() => [...document.querySelectorAll('[data-testid=altair]')].filter((el) => el.offsetParent)
    .every((el) => el.querySelector('div')?.__tbtView) && !document.querySelector('.pending:not(.step-button)')"""


def squeezed(page) -> list[tuple]:
    """Every chart on sight drawn narrower than its box and its own width allow: (id, box, drawn)."""
    page.wait_for_function(READY_JS, timeout=60_000)
    page.wait_for_timeout(300)         # a resize the box's change raised redraws in the next frame
    out = []
    for plot in drawn(page):
        width = json.loads(plot["spec"] or "{}").get("width")
        wants = width if isinstance(width, (int, float)) else 100      # a step per band, a composition
        if plot["drawn"] < min(plot["width"], wants) - 2:
            out.append((plot["id"], round(plot["width"]), round(plot["drawn"])))
    return out


def visit_chapters(page, order) -> dict:
    """Click each chapter tab in `order`; {tab: squeezed charts} of those that lost their width."""
    lost = {}
    for i in order:
        tab = page.locator(TABS).nth(i)
        tab.click()
        if bad := squeezed(page):
            lost[tab.inner_text().strip()] = bad
    return lost


@pytest.mark.parametrize("lang,form", [("en", "desktop"), ("zh", "phone")])
def test_charts_redrawn_out_of_sight_come_back_at_their_width(browser, app_url, shots, lang, form):
    context = browser.new_context(locale=LOCALES[lang], **FORMS[form])
    page = context.new_page()
    expose_views(page)
    try:
        page.goto(app_url)
        first_draw(page, timeout_ms=60_000)
        count = page.locator(TABS).count()
        page.locator(TABS).nth(3).click()                   # Decode: the tree's "run" row redraws every chapter
        page.wait_for_selector("#fork-tree .tbt-tree-label[data-index='0']", timeout=30_000)
        page.locator("#fork-tree .tbt-tree-label[data-index='0']").click()
        page.wait_for_timeout(500)
        lost = visit_chapters(page, range(count))
        assert not lost, f"after a click on the tree, charts drawn narrower than their box: {lost}"
        # a fork from the step on show, the token list untouched (its second choice)
        page.locator(TABS).nth(3).click()
        shown = page.get_attribute("#step-facts .tbt-step-card", "data-step")
        page.click("#fork-run")
        page.wait_for_selector(f"#output .tbt-forced[data-step='{shown}']", state="attached", timeout=180_000)
        page.wait_for_selector(f"#step-facts [data-step='{shown}']", timeout=30_000)    # Decode stays there
        lost = visit_chapters(page, reversed(range(count)))
        page.screenshot(path=str(shots / f"charts-seen-{lang}-{form}.png"), full_page=True)
        assert not lost, f"after a fork, charts drawn narrower than their box: {lost}"
    finally:
        context.close()


# the step's height, and what inside it is cut by a box that does not scroll (issue 48 item 6: after
# Run live step 4 grew to 743 px and step 7's answers hid ~110 px under such a fold)
FIT_JS = """(step) => { const el = document.querySelector('#wt-step-' + step);
  const cut = [...el.querySelectorAll('*')].filter((e) => e.offsetParent && e.scrollHeight > e.clientHeight + 2
      && ['hidden', 'clip'].includes(getComputedStyle(e).overflowY))
    .map((e) => `${e.id || e.className}: ${e.scrollHeight - e.clientHeight} px`);
  return [document.documentElement.scrollHeight, cut]; }"""


def walk(page, steps, key: str) -> dict:
    """Move through the walkthrough's steps with `key`; {step: squeezed charts, or what does not fit}."""
    lost = {}
    for step in steps:
        page.wait_for_selector(f"#wt-step-{step}", state="visible", timeout=10_000)
        if bad := squeezed(page):
            lost[step] = bad
        height, cut = page.evaluate(FIT_JS, step)
        if height > 720 or cut:
            lost[f"{step} (fit)"] = (height, cut)
        page.keyboard.press(key)
    return lost


def test_presenter_run_live_streams_into_the_step_on_screen_and_every_step_keeps_its_charts(browser, app_url, shots):
    """Presenter mode (1280x720) on step 4 (Decode): Run live draws the tokens into that step's visual as
    they come (a caret at the end of the growing answer), then every step. After the run, and back on
    the recording, every step's charts are drawn at their box's width and each step fits 720 px."""
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 720})
    page = context.new_page()
    expose_views(page)
    try:
        page.goto(app_url + "?present=1")
        page.wait_for_function("() => document.querySelector('#wt-source')?.innerText.includes('recording')",
                               timeout=60_000)
        page.wait_for_selector("#wt-compare .tbt", timeout=30_000)
        for step in range(1, 4):
            page.keyboard.press("ArrowRight")
            page.wait_for_selector(f"#wt-step-{step}", state="visible", timeout=10_000)
        page.click("#wt-run-live")
        # mid-run: the output in step 4's visual carries the caret of a run still going
        page.wait_for_selector("#wt-step-3 #wt-output .tbt-caret", timeout=60_000)
        assert "Running live" in page.inner_text("#wt-source")
        page.screenshot(path=str(shots / "walkthrough-live-streaming.png"))
        # the end: the run's own result on every step, no caret left
        page.wait_for_function("() => document.querySelector('#wt-source').innerText.includes('live run')",
                               timeout=180_000)
        page.wait_for_selector("#wt-step-3 #wt-output .tbt-legend", timeout=30_000)
        assert page.locator("#wt-output .tbt-caret").count() == 0
        assert "Running" not in page.inner_text("#wt-source")
        for step in (2, 1, 0):
            page.keyboard.press("ArrowLeft")
            page.wait_for_selector(f"#wt-step-{step}", state="visible", timeout=10_000)
        lost = walk(page, range(10), "ArrowRight")
        assert not lost, f"after Run live, steps with charts narrower than their box or past 720 px: {lost}"
        page.click("#wt-use-recording")
        page.wait_for_function("() => document.querySelector('#wt-source').innerText.includes('recording')",
                               timeout=60_000)
        lost = walk(page, reversed(range(10)), "ArrowLeft")
        page.screenshot(path=str(shots / "charts-seen-presenter.png"))
        assert not lost, f"back to the recording, steps with charts narrower than their box or past 720 px: {lost}"
    finally:
        context.close()
