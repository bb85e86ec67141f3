"""A served model in the page (headless Chromium): the host's llama.cpp server is offered under
"Run on"; its run streams, every chapter draws what a server can show and says what it hides, and a
fork is refused with its reason. Screenshots land in test-output/browser/served-*.png."""

from __future__ import annotations

from tests.browser.test_browser import open_tab


def test_a_served_run_in_every_chapter(page, shots):
    page.locator("#run-on input").click()
    page.get_by_role("option", name="llama.cpp (smollm2)").click()
    page.fill("#prompt textarea", "Explain in two sentences why the sky is blue.")
    page.click("#run")
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=120_000)
    assert "served by llama.cpp" in page.inner_text("#status")
    page.screenshot(path=str(shots / "served-output.png"))

    open_tab(page, "5 · Speed", ["#timeline", "#step-times"])
    speed = page.inner_text("#speed-cards")
    assert "inter-token latency (ITL)" in speed and "client-side" in speed
    assert "prefill speed" not in speed and "watching cost" not in speed
    page.screenshot(path=str(shots / "served-speed.png"), full_page=True)

    # what a server hides is said in the notices (their texts: tests/engine/test_served.py); here, they draw
    open_tab(page, "2 · Prefill", ["#heatmap", "#head-view"])
    open_tab(page, "3 · KV cache", ["#kv-growth", "#kv-projection"])
    open_tab(page, "4 · Decode", ["#candidates"])
    card = page.inner_text("#step-facts")
    assert "logprob" in card and "watching cost" not in card
    page.screenshot(path=str(shots / "served-decode.png"), full_page=True)
    page.click("#fork-run")
    page.wait_for_selector("text=a served trace cannot be forked here", timeout=30_000)
    # the page still serves its own model afterwards
    page.locator("#run-on input").click()
    page.get_by_role("option", name="SmolLM2-135M-Instruct").click()
    page.fill("#prompt textarea", "Hello, world!")
    page.click("#run")
    page.wait_for_function("() => !document.querySelector('#status')?.innerText.includes('served by')",
                           timeout=120_000)
