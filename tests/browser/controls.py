"""Setting a page control from a test so that the setting has taken before the test goes on.

A slider's typed value reaches the page's state when its number box is left (Enter, as the page's
listener makes it, or Tab); a test that types and clicks Run at once may run with the old value on
a busy machine. `set_slider` types, leaves the box and waits until the slider itself shows the value
(its range input), typing again if a late redraw of the page put the old value back."""

from __future__ import annotations

import json


def set_slider(page, elem_id: str, value: int, tries: int = 3) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    taken = f"(v) => document.querySelector('#{elem_id} input[type=range]')?.value === v"
    for attempt in range(tries):
        box.fill(str(value))
        box.press("Enter")
        try:
            page.wait_for_function(taken, arg=str(value), timeout=5_000)
            page.wait_for_timeout(300)                       # still there after the page's next redraw
            if page.evaluate(taken, str(value)):
                return
        except Exception:           # noqa: BLE001 (playwright's TimeoutError) — type it again
            if attempt == tries - 1:
                raise
    raise AssertionError(f"#{elem_id} did not keep the value {value}")


def first_draw(page, lang: str | None = None, timeout_ms: int = 60_000) -> None:
    """Wait for the end of the page's first draw (in `lang`, if given): the recording is drawn and the
    chain of steps after the page reported its language has ended (<body data-tbt-drawn>, app.py).
    Before that a late step of the chain may still update a control the test acted on: a validation
    message under the prompt went with it once (a clean-clone run's zh refusal test)."""
    page.wait_for_selector("#output .tbt-recording", timeout=timeout_ms)
    page.wait_for_function("(lang) => document.body.dataset.tbtDrawn?.startsWith(lang) === true", arg=lang or "",
                           timeout=timeout_ms)


# Animation-frame loops that run on their own: Gradio's status tracker asks for a frame every frame
# while it counts a pending event's time; one left running keeps the page redrawing 60 times a second.
# Installed before the page's scripts (the `page` fixture does), counting only while asked.
FRAME_LOOPS_JS = """(() => {
  const ask = window.requestAnimationFrame.bind(window);
  window.tbtLoops = {on: false, tracker: 0};
  window.requestAnimationFrame = (callback) => {
    if (window.tbtLoops.on && (new Error().stack || '').includes('statustracker')) window.tbtLoops.tracker += 1;
    return ask(callback);
  };
})();"""


def frame_loops(page, frames: int = 30) -> float:
    """Status-tracker frame requests per frame over `frames` frames: how many of its loops run (the
    page's own frames are counted, so a slow machine's dropped frames do not change the figure)."""
    return page.evaluate("""(frames) => new Promise((done) => {
      window.tbtLoops.tracker = 0; window.tbtLoops.on = true;
      let n = 0;
      const tick = () => { if (++n < frames) { requestAnimationFrame(tick); return; }
        window.tbtLoops.on = false; done(window.tbtLoops.tracker / frames); };
      requestAnimationFrame(tick);
    })""", frames)


def press_answered(page, selector: str, timeout_s: float = 10, answered=None) -> bool:
    """Click `selector`, a button whose event runs outside the queue (a POST to /run/predict), and
    see the server answer it; a press unanswered after `timeout_s` is pressed once more (the button's
    click must be trigger_mode="multiple", or the page holds the second press back). Returns whether
    the first press was answered. Now and then, on a loaded 2-core box, Chromium issued such a POST
    and the server never got a connection for it (uvicorn's connections and tasks dumped at the
    failure: 6 times in ~350 Stop presses, 2026-12-07; the zh walkthrough link waited 30 s the same
    way). `answered()`, if given, says the press took effect although its answer was not seen. The
    answer looked for is the button's own (the request's trigger_id is its component's id, from the
    page's gradio_config): another event's answer (a tab's, a step's) once passed for it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    button = page.evaluate("(id) => (window.gradio_config?.components || []).find((c) => c.props?.elem_id === id)"
                           "?.id ?? null", selector.removeprefix("#"))
    assert button is not None, f"no component with elem_id {selector!r} in the page's config"

    def ours(response) -> bool:
        if response.request.method != "POST" or "/run/predict" not in response.url:
            return False
        try:
            return json.loads(response.request.post_data or "{}").get("trigger_id") == button
        except ValueError:
            return False
    for attempt in (1, 2):
        try:
            with page.expect_response(ours, timeout=timeout_s * 1000):
                page.click(selector)
            return attempt == 1
        except PlaywrightTimeout:
            print(f"{selector}: press {attempt} got no answer in {timeout_s:.0f} s")
            if answered is not None and answered():
                return False
    raise AssertionError(f"two presses of {selector} got no answer from the server")
