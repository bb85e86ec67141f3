"""Issue 39 items 3, 6 and 8 in headless Chromium: Enter in the decode step box applies the typed
step (en and zh); a fork keeps the run's attention and logit lens (the chapter's chart download then
holds the attention row and the lens as charts: notices are never shipped), and the speed cards and
the status line describe the branch on show, not the parent's prefill. Screenshots in test-output/browser/."""

import re

import pytest

from tests.browser.controls import first_draw
from tests.browser.test_browser import fork_at_step, open_tab, run_prompt

DECODE = {"en-US": "4 · Decode", "zh-CN": "4 · 解码"}


def step_on_show(page) -> str:
    return page.inner_text("#step-facts")


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_enter_in_the_step_box_applies_the_typed_step(browser, app_url, shots, locale):
    context = browser.new_context(locale=locale, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(app_url)
        first_draw(page, timeout_ms=120_000)     # the recording, drawn
        page.get_by_role("tab", name=DECODE[locale]).click()
        page.wait_for_selector("#candidates .vega-embed .marks", timeout=60_000)
        before = step_on_show(page)
        box = page.locator("#step input[type=number]")
        box.click()
        box.fill("5")
        box.press("Enter")                    # no Tab, no click elsewhere: Enter alone applies it
        page.wait_for_function("(before) => document.querySelector('#step-facts').innerText !== before",
                               arg=before, timeout=60_000)
        facts = step_on_show(page)
        assert re.search(r"\b5\b", facts), facts
        assert box.input_value() == "5"
        page.locator("#step-facts").screenshot(path=str(shots / f"enter-step-{locale[:2]}.png"))
    finally:
        context.close()


def test_a_branch_keeps_attention_and_lens_and_shows_its_own_figures(page, shots):
    run_prompt(page, "Xiao Ming went to the supermarket and bought some apples. Then he", max_tokens=12)
    parent_status = page.inner_text("#status")
    open_tab(page, "4 · Decode", ["#candidates"])
    fork_at_step(page, 3, "Enter")
    # the status line is the branch's (item 8)
    page.wait_for_function("() => document.querySelector('#status')?.innerText.includes('b1')", timeout=60_000)
    status = page.inner_text("#status")
    assert status != parent_status and "TTFT" in status and "b1" in status, status
    # a step the branch generated: its attention row and lens are charts, not notices (item 3)
    box = page.locator("#step input[type=number]")
    box.fill("6")
    box.press("Enter")
    page.wait_for_function("() => /\\b6\\b/.test(document.querySelector('#step-facts').innerText)", timeout=60_000)
    page.wait_for_selector("#attention-row .vega-embed .marks", timeout=60_000)
    page.wait_for_selector("#lens .vega-embed .marks", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#attention-row .pending, #lens .pending')", timeout=60_000)
    page.click("#export-charts")
    page.wait_for_selector("#share-files-explore a", timeout=180_000)
    listed = re.sub(r"\s+", "", page.inner_text("#share-files-explore"))
    for name in ("decode-attention-row.svg", "decode-lens.svg", "decode-candidates.svg"):
        assert name in listed, listed
    page.locator("#decode-panel, #attention-row").first.screenshot(path=str(shots / "fork-attention-row.png"))
    # the speed cards: the branch's TTFT and the prefix it reused, no prefill of the parent (item 8)
    open_tab(page, "5 · Speed", ["#timeline"])
    cards = page.inner_text("#speed-cards")
    assert "prefix reused" in cards and "Branch b1" in cards, cards
    names = page.evaluate("() => [...document.querySelectorAll('#speed-cards .tbt-card-name')].map(e => e.innerText)")
    assert "prefill" not in [n.strip().lower() for n in names], names
    page.locator("#speed-cards").screenshot(path=str(shots / "fork-speed-cards.png"))
    # the timeline on the branch's own clock (its rows: tests/unit/test_branch_timeline.py): looked at
    page.wait_for_selector("#timeline .vega-embed canvas, #timeline .vega-embed svg", timeout=60_000)
    page.locator("#timeline").screenshot(path=str(shots / "fork-timeline.png"))
    page.locator("#step-times").screenshot(path=str(shots / "fork-step-times.png"))
