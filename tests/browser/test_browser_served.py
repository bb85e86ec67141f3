"""A served model in the page (headless Chromium): the host's llama.cpp server is offered under
"Run on"; its run streams, every chapter draws what a server can show and says what it hides, and a
fork is refused with its reason. Screenshots land in test-output/browser/served-*.png."""

from __future__ import annotations

from tests.browser.test_browser import open_tab


def test_a_served_run_in_every_chapter(page, shots):
    page.locator("#run-on input").click()
    page.get_by_role("option", name="llama.cpp (smollm2)").click()
    # the header says where runs go now: that server, not this one's CPU
    page.wait_for_function("() => document.querySelector('#model-plain').innerText.includes('llama.cpp')",
                           timeout=30_000)
    assert "this server's CPU." not in page.inner_text("#model-plain").split("This page's own model")[0]
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
    # a served trace cannot be continued here: the buttons are off, and the panel says why
    assert page.locator("#fork-run").is_disabled() and page.locator("#fork-recompute").is_disabled()
    assert "its KV cache lives on the server" in page.inner_text("#fork-blocked")
    # the page still serves its own model afterwards, and its own runs can be forked again
    page.locator("#run-on input").click()
    page.get_by_role("option", name="SmolLM2-135M-Instruct").click()
    page.fill("#prompt textarea", "Hello, world!")
    page.click("#run")
    page.wait_for_function("() => !document.querySelector('#status')?.innerText.includes('served by')",
                           timeout=120_000)
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=120_000)
    assert not page.locator("#fork-run").is_disabled() and not page.locator("#fork-blocked").is_visible()
    assert "this server's" in page.inner_text("#model-plain")


def test_the_load_sweep_sends_what_a_run_sends(page, shots):
    """A question that needs the chat template (raw, the model ends at once: "streamed no content"):
    the sweep applies it as a run does, so every level answers."""
    page.locator("#run-on input").click()
    page.get_by_role("option", name="llama.cpp (smollm2)").click()
    page.fill("#prompt textarea", "Why do cats purr? Answer in two sentences.")
    page.get_by_role("tab", name="5 · Speed").click()
    page.click("#load-sweep")
    page.wait_for_selector("#load-table table", state="visible", timeout=180_000)
    table = page.inner_text("#load-table")
    page.locator("#load-table").screenshot(path=str(shots / "served-load-table.png"))
    assert "streamed no content" not in table, table
    assert page.locator("#load-plot .vega-embed .marks").count() == 1
