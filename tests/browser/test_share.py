"""Share a moment (issue 31): a copied link opens the same view in another browser, a bad link gets
a message, the charts download as SVG/PNG in the page's language, and the walkthrough downloads as
a deck that presents from disk with the network off. Screenshots in test-output/browser/share-*."""

import re
from pathlib import Path

import pytest

from tests.browser.controls import first_draw, press_answered

TAB = {"en-US": "4 · Decode", "zh-CN": "4 · 解码"}
COPY = {"en-US": "Copy link to this view", "zh-CN": "复制此视图的链接"}
OPENED = {"en-US": "Opened from a shared link", "zh-CN": "从分享的链接打开"}
REFUSED = {"en-US": "This shared link could not be opened.", "zh-CN": "无法打开这个分享的链接。"}
VIEWPORT = {"width": 1400, "height": 1000}


def fresh(browser, app_url, locale, query=""):
    context = browser.new_context(locale=locale, viewport=VIEWPORT, accept_downloads=True)
    page = context.new_page()
    page.goto(app_url + query)
    page.wait_for_selector("#prompt textarea", timeout=60_000)
    return context, page


def number_of(page, selector: str) -> str:
    return page.evaluate(f"() => document.querySelector('{selector} input[type=number]').value")


def set_slider(page, selector: str, value: int) -> None:
    box = page.locator(f"{selector} input[type=number]")
    box.fill(str(value))
    box.press("Tab")              # a slider redraws when let go: here, when its number box is left


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_copied_link_opens_the_same_view_elsewhere(browser, app_url, output_dir, locale):
    """en: a run of the visitor's own (kept by the server); zh: the recording. Decode chapter, step 5,
    layer 12, head 3: a second context (another browser, in effect) opens the link on the same view."""
    shots = output_dir / "browser"
    shots.mkdir(exist_ok=True)
    context, page = fresh(browser, app_url, locale)
    try:
        first_draw(page, timeout_ms=60_000)
        if locale == "en-US":           # the visitor's own run, kept by the server for the link
            page.fill("#prompt textarea", "The capital of France is")
            page.click("#run")
            page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=180_000)
        page.get_by_role("tab", name=TAB[locale]).click()
        page.wait_for_selector("#candidates .vega-embed .marks", timeout=30_000)
        set_slider(page, "#step", 5)
        page.wait_for_function("() => document.querySelector('#step-facts').innerText.includes('5')", timeout=30_000)
        set_slider(page, "#decode-layer", 12)
        page.click("#decode-head input")
        page.get_by_role("option", name="3", exact=True).click()
        page.wait_for_function("() => document.querySelector('#decode-head input').value === '3'", timeout=30_000)
        page.locator(".tbt-share").get_by_role("button", name=COPY[locale]).click()
        link = page.locator("#share-link-explore textarea, #share-link-explore input").first
        page.wait_for_function("() => { const b = document.querySelector('#share-link-explore textarea, "
                               "#share-link-explore input'); return b && b.value.includes('open=explore'); }",
                               timeout=30_000)
        url = link.input_value()
        assert "chapter=decode" in url and "step=5" in url and "layer=12" in url and "head=3" in url, url
        assert ("run=rec" in url) == (locale == "zh-CN"), url
        page.screenshot(path=str(shots / f"share-link-{locale[:2]}.png"))
    finally:
        context.close()
    # a fresh context: no cookies, no session, another browser for all the page can tell
    other = browser.new_context(locale="en-US", viewport=VIEWPORT)       # the link carries the language
    page = other.new_page()
    try:
        page.goto(url)
        page.wait_for_function("() => document.querySelector('#step input[type=number]')?.value === '5'",
                               timeout=120_000)
        page.wait_for_selector("#candidates .vega-embed .marks", timeout=60_000)
        assert page.get_by_role("tab", name=TAB[locale]).get_attribute("aria-selected") == "true"
        assert page.evaluate("() => document.documentElement.lang").startswith(locale[:2])
        assert "5" in page.inner_text("#step-facts")
        # where the page came from (issue 39): the line says so and names the run's prompt, which is in
        # the prompt box; nothing the link asked was refused (the line has no second sentence)
        note = page.inner_text("#share-note").strip()
        assert note.startswith(OPENED[locale]) and "\n" not in note, note
        prompt = page.input_value("#prompt textarea")
        assert prompt and prompt[:20] in note, (prompt, note)
        if locale == "en-US":
            assert prompt == "The capital of France is" and "TTFT" in page.inner_text("#status")
        assert number_of(page, "#step") == "5"
        assert number_of(page, "#decode-layer") == "12"
        assert page.locator("#decode-head input").input_value() == "3"
        page.screenshot(path=str(shots / f"share-opened-{locale[:2]}.png"))
        # the fork's list is step 5's (issue 48): "Continue from here", untouched, forks there
        page.wait_for_selector("#step-facts [data-step='5']", timeout=30_000)
        page.click("#fork-run")
        page.wait_for_selector("#output .tbt-forced[data-step='5']", state="attached", timeout=180_000)
    finally:
        other.close()


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_a_bad_link_says_so(browser, app_url, locale):
    """A tampered run id and an out-of-range step: the page opens (on the recording) and says why."""
    context, page = fresh(browser, app_url, locale,
                          "?open=explore&run=ffff0000ffff0000ffff0000ffff0000&chapter=decode&step=999")
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.wait_for_selector("#share-note", state="visible", timeout=120_000)
        note = page.inner_text("#share-note")
        lines = [line.strip() for line in note.strip().splitlines() if line.strip()]
        assert lines[0] == REFUSED[locale], note            # plainly, first; then one sentence a line
        assert all(line[0].isupper() or not line[0].isascii() for line in lines), lines
        assert ("no longer kept" in note) if locale == "en-US" else ("已不在本服务器上" in note), note
        assert "999" in note, note
        assert page.locator("#output .tbt-recording").count() == 1           # the recording instead
        page.goto(page.url.split("?")[0] + "?open=explore&run=not-a-run&chapter=decode")
        page.wait_for_selector("#share-note", state="visible", timeout=120_000)
        assert ("not one of ours" in page.inner_text("#share-note")) if locale == "en-US" else (
            "不是本页生成的" in page.inner_text("#share-note"))
        assert page.locator(".toast-body.error, .error").count() == 0
        assert not errors, errors
    finally:
        context.close()


def test_charts_and_deck_download(browser, app_url, output_dir, tmp_path):
    """Explore → Speed: its charts as SVG and PNG (titles in the page's language, zh here), the speed
    cards as a picture; the walkthrough's deck downloads, then presents from file:// offline."""
    context, page = fresh(browser, app_url, "zh-CN")
    try:
        first_draw(page, timeout_ms=60_000)
        page.get_by_role("tab", name="5 · 速度").click()
        page.wait_for_selector("#timeline .vega-embed .marks", timeout=30_000)
        page.click("#export-charts")
        page.wait_for_selector("#share-files-explore a", timeout=120_000)
        listed = re.sub(r"\s+", "", page.inner_text("#share-files-explore"))
        for name in ("speed-timeline.svg", "speed-timeline.png", "speed-step-times.svg", "speed-cards.png"):
            assert name in listed, listed
        with page.expect_download() as got:
            page.locator("#share-files-explore tr", has_text=re.compile(r"speed-timeline\s*\.svg")).locator("a").first.click()
        svg = Path(got.value.path()).read_text(encoding="utf-8")
        assert "一次请求的时间线" in svg, svg[:300]                 # the timeline's zh title, as text
        # another chapter: the list goes (issue 48: it sat above every chapter's tabs for good)
        page.get_by_role("tab", name="4 · 解码（逐 token 生成）").click()
        page.wait_for_selector("#share-files-explore", state="hidden", timeout=30_000)
        page.get_by_role("tab", name="导览").first.click()
        page.click("#deck-walkthrough")
        page.wait_for_selector("#share-files-walkthrough a", timeout=120_000)
        assert "token-by-token-zh.html" in re.sub(r"\s+", "", page.inner_text("#share-files-walkthrough"))
        with page.expect_download() as got:
            page.locator("#share-files-walkthrough tr", has_text=re.compile(r"token-by-token-zh\s*\.html")).locator("a").first.click()
        deck = tmp_path / "deck.html"
        deck.write_bytes(Path(got.value.path()).read_bytes())
    finally:
        context.close()
    present_offline(browser, deck, output_dir, "zh")


def present_offline(browser, deck: Path, output_dir: Path, lang: str) -> None:
    """The deck from file:// with the network cut: every request is routed here and any to a host
    fails the test; each slide shows its title (and its chart where it has one); keys move."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
    hosts = []

    def route(r):
        if not r.request.url.startswith("file:"):
            hosts.append(r.request.url)
            return r.abort()
        return r.continue_()
    context.route("**/*", route)
    page = context.new_page()
    try:
        page.goto(deck.as_uri())
        count = page.locator("section.slide").count()
        assert count >= 9, count
        for i in range(count):
            on = page.locator("section.slide.on")
            assert on.count() == 1 and on.get_attribute("data-index") == str(i)
            assert on.locator("h1").inner_text().strip()
            if i >= 1:                   # every walkthrough step draws its chart
                box = on.locator("figure.chart svg").first.bounding_box()
                assert box and box["width"] > 300 and box["height"] > 150, (i, box)
            page.screenshot(path=str(output_dir / "browser" / f"share-deck-{lang}-{i}.png"))
            page.keyboard.press("PageDown" if i % 2 else "ArrowRight")
        page.keyboard.press("PageUp")
        assert page.locator("section.slide.on").get_attribute("data-index") == str(count - 2)
        page.keyboard.press("Home")
        assert page.locator("section.slide.on").get_attribute("data-index") == "0"
        assert not hosts, hosts
        assert not re.search(r"(?:src|href)=\"https?:", deck.read_text(encoding="utf-8"))
    finally:
        context.close()


def test_a_walkthrough_step_link_in_chinese(browser, app_url, output_dir):
    """The walkthrough's link names the step on screen; opened in an English browser, the page comes
    up in the link's language on that step."""
    context, page = fresh(browser, app_url, "zh-CN")
    try:
        first_draw(page, "zh")           # a click before the first draw's end can be undone by its last steps
        page.get_by_role("tab", name="导览").first.click()
        page.wait_for_selector("#wt-step-0 .tbt-next", timeout=60_000)
        for step in range(2):
            page.locator(f"#wt-step-{step} .tbt-next").click()
        # step 2 the only step on screen: the link names the first one shown (links.PAGE_JS)
        page.wait_for_function("() => [...document.querySelectorAll('[id^=\"wt-step-\"]')].filter((e) => "
                               "/^wt-step-\\d+$/.test(e.id) && e.offsetParent !== null).map((e) => e.id).join() "
                               "=== 'wt-step-2'", timeout=30_000)
        press_answered(page, "#share-walkthrough")
        box = page.locator("#share-link-walkthrough textarea, #share-link-walkthrough input").first
        try:
            page.wait_for_function("() => (document.querySelector('#share-link-walkthrough textarea, "
                                   "#share-link-walkthrough input')?.value || '').includes('wt=2')", timeout=30_000)
        finally:
            print("the walkthrough link:", box.input_value())      # what it was, should it fail
        url = box.input_value()
        assert "open=walkthrough" in url and "lang=zh" in url and "run=" not in url, url     # the recording
    finally:
        context.close()
    other = browser.new_context(locale="en-US", viewport=VIEWPORT)
    page = other.new_page()
    try:
        page.goto(url)
        page.wait_for_function("() => document.querySelector('#wt-step-2')?.offsetParent !== null", timeout=120_000)
        page.wait_for_selector("#wt-kv .vega-embed .marks", timeout=60_000)
        assert page.evaluate("() => document.documentElement.lang").startswith("zh")
        assert page.get_by_role("tab", name="导览").first.get_attribute("aria-selected") == "true"
        page.screenshot(path=str(output_dir / "browser" / "share-walkthrough-zh.png"))
    finally:
        other.close()
