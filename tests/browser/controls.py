"""Setting a page control from a test so that the setting has taken before the test goes on.

A slider's typed value reaches the page's state when its number box is left (Enter, as the page's
listener makes it, or Tab); a test that types and clicks Run at once may run with the old value on
a busy machine. `set_slider` types, leaves the box and waits until the slider itself shows the value
(its range input), typing again if a late redraw of the page put the old value back."""

from __future__ import annotations


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
