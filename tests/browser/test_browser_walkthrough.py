"""The walkthrough as a presenter uses it: 1280x720, ?present=1, moved with the keyboard, in English
and in Chinese, from the recorded traces only. A screenshot per step lands in
test-output/browser/walkthrough-<lang>-<step>.png; look at them after changing a step. Run live
streaming into the step on screen: tests/browser/test_charts_seen.py (with its after-run walk)."""

import pytest

VISUALS = {0: "#wt-compare", 1: "#wt-heatmap", 2: "#wt-kv", 3: "#wt-candidates", 4: "#wt-timeline",
           5: "#wt-lab", 6: "#wt-reasoning-chart", 7: "#wt-playground", 8: "#wt-floor", 9: "#wt-profile"}
SOURCE = {"en-US": "recording", "zh-CN": "录制版本"}
NEXT = {"en-US": "Next", "zh-CN": "下一步"}
# one problem in both languages (5 + 7), so one right answer; the recorded normal answers are wrong
# (en: 2; zh: it repeats the question, 5 then 7)
VERDICT = {"en-US": "Checked against the right answer, 12", "zh-CN": "对照正确答案 12"}
WRONG = {"en-US": "wrong", "zh-CN": "错误"}


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
        for step in range(len(VISUALS)):
            visual = VISUALS[step]
            marks = f"{visual} .vega-embed .marks" if step != 0 else f"{visual} .tbt"
            page.wait_for_selector(marks, timeout=30_000)
            assert NEXT[locale] in page.inner_text(f"#wt-step-{step}")
            # nothing still re-rendering (Gradio fades pending components)
            page.wait_for_function("() => !document.querySelector('.pending:not(.step-button)')", timeout=30_000)
            # the whole step fits the projector's screen: nothing below the fold, no scrolling
            height = page.evaluate("() => document.documentElement.scrollHeight")
            assert height <= 720, (locale, step, height)
            box = page.locator(visual).bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 720, (step, box)
            if step != 0:       # the whole chart (title, labels, legend) inside its column: nothing cut
                room = page.evaluate(f"""() => {{
                  const col = document.querySelector('#wt-step-{step} .tbt-wt-visual').getBoundingClientRect();
                  const chart = document.querySelector('{visual} .vega-embed .marks').getBoundingClientRect();
                  return [chart.left - col.left, col.right - chart.right];
                }}""")
                assert min(room) >= -1, (locale, step, room)
            # narration a room can read
            size = page.evaluate(f"() => parseFloat(getComputedStyle(document.querySelector("
                                 f"'#wt-step-{step} .tbt-wt-text span.md')).fontSize)")
            assert size >= 22, (step, size)
            page.screenshot(path=str(shots / f"walkthrough-{locale[:2]}-{step + 1}.png"))
            if step == 6:            # chapter 7 checks both answers against the right one, plainly
                verdict = page.inner_text("#wt-verdict")
                assert VERDICT[locale] in verdict and WRONG[locale] in verdict, verdict
            page.keyboard.press("ArrowRight" if step % 2 == 0 else "PageDown")
            if step < len(VISUALS) - 1:
                page.wait_for_selector(f"#wt-step-{step + 1}", state="visible", timeout=10_000)
        page.keyboard.press("ArrowLeft")
        page.wait_for_selector(f"#wt-step-{len(VISUALS) - 2}", state="visible", timeout=10_000)
        assert "Run live" not in SOURCE[locale] and errors == []
    finally:
        context.close()
