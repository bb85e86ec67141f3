"""The walkthrough as a presenter uses it: 1280x720, ?present=1, moved with the keyboard, in English
and in Chinese, from the recorded traces only. A screenshot per step lands in
test-output/browser/walkthrough-<lang>-<step>.png; look at them after changing a step."""

import pytest

pytestmark = pytest.mark.browser

VISUALS = {0: "#wt-compare", 1: "#wt-heatmap", 2: "#wt-kv", 3: "#wt-candidates", 4: "#wt-timeline",
           5: "#wt-lab", 6: "#wt-reasoning-chart", 7: "#wt-playground"}
SOURCE = {"en-US": "recording", "zh-CN": "录制版本"}
NEXT = {"en-US": "Next", "zh-CN": "下一步"}
VERDICT = {"en-US": "Checked against the right answer, 12", "zh-CN": "对照正确答案 7"}
WRONG = {"en-US": "wrong", "zh-CN": "错误"}      # the recorded normal answers (2; 12) are wrong


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_walk_all_steps_with_the_keyboard(browser, app_url, output_dir, locale):
    shots = output_dir / "browser"
    shots.mkdir(exist_ok=True)
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 720})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(app_url + "?present=1")
        page.wait_for_selector("body.tbt-present #walkthrough", timeout=60_000)
        page.wait_for_function(f"() => document.querySelector('#wt-source')?.innerText.includes('{SOURCE[locale]}')",
                               timeout=60_000)
        for step in range(8):
            visual = VISUALS[step]
            marks = f"{visual} .vega-embed .marks" if step != 0 else f"{visual} .tbt"
            page.wait_for_selector(marks, timeout=30_000)
            assert NEXT[locale] in page.inner_text(f"#wt-step-{step}")
            box = page.locator(visual).bounding_box()
            assert box["y"] >= 0 and box["y"] + min(box["height"], 260) <= 720, (step, box)   # no scrolling
            # nothing still re-rendering (Gradio fades pending components)
            page.wait_for_function("() => !document.querySelector('.pending:not(.step-button)')", timeout=30_000)
            page.screenshot(path=str(shots / f"walkthrough-{locale[:2]}-{step + 1}.png"))
            if step == 6:            # chapter 7 checks both answers against the right one, plainly
                verdict = page.inner_text("#wt-verdict")
                assert VERDICT[locale] in verdict and WRONG[locale] in verdict, verdict
            page.keyboard.press("ArrowRight" if step % 2 == 0 else "PageDown")
            if step < 7:
                page.wait_for_selector(f"#wt-step-{step + 1}", state="visible", timeout=10_000)
        page.keyboard.press("ArrowLeft")
        page.wait_for_selector("#wt-step-6", state="visible", timeout=10_000)
        assert "Run live" not in SOURCE[locale] and errors == []
    finally:
        context.close()
