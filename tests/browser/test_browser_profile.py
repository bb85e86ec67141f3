"""The Speed chapter's profile and the free logit lens, as a visitor sees them: the recording's profile
before any run, the visitor's own after it; the lens drawn on view; the download carrying the lens."""

import json

from tests.browser.test_browser import open_tab, run_prompt


NOTE = "document.querySelector('#profile-note')?.innerText || ''"
SKIPPED = "was not profiled on its own"      # profile_skipped: its replay would cost more than the run


def profiled_after_run(page) -> str:
    """Wait for the automatic profile after a run: "profiled", or "skipped" where the replay was
    judged dearer than the run (engine/profile/run.affordable_repeats, from the run's own step times:
    a loaded machine can tip it)."""
    page.wait_for_function(f"() => {{ const t = {NOTE}; return t.includes('your run') || t.includes('{SKIPPED}'); }}",
                           timeout=120_000)
    return "skipped" if SKIPPED in page.locator("#profile-note").inner_text() else "profiled"


def test_profile_and_lens_of_the_visitors_run(page, shots):
    open_tab(page, "5 · Speed", ["#profile-prefill", "#profile-decode"])
    assert "Recorded" in page.locator("#profile-note").inner_text()       # never empty before a run
    run_prompt(page, "Why is the sky blue? Answer in one sentence.", max_tokens=12)
    # the profile follows the drawn chapters (its own event): the note turns to the visitor's run, or
    # says why it was not replayed (dearer than the run: a loaded box's verdict), and the button does it
    if profiled_after_run(page) == "skipped":
        open_tab(page, "5 · Speed", ["#profile-decode"])
        page.click("#profile-run")
        page.wait_for_function(f"() => ({NOTE}).includes('your run')", timeout=120_000)
    open_tab(page, "5 · Speed", ["#profile-prefill", "#profile-decode"])
    page.locator("#profile-decode").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "profile-en.png"), full_page=False)
    # the lens of the step on show, computed on view from the states the run kept
    open_tab(page, "4 · Decode", ["#lens"])
    assert page.locator("#lens .vega-embed").count() == 1
    # the download is the run with every step's lens and none of the states
    page.get_by_role("tab", name="Trace file").click()
    with page.expect_download() as info:
        page.locator("#download a").first.click()
    data = json.loads(open(info.value.path(), encoding="utf-8").read())
    assert data["steps"] and all(s["lens"] and s.get("hidden") is None for s in data["steps"])


def test_profile_button_profiles_the_step_on_show(page, shots):
    run_prompt(page, "Name three colours.", max_tokens=10)
    open_tab(page, "5 · Speed", ["#profile-decode"])        # a tab's components exist once it is shown
    profiled_after_run(page)
    open_tab(page, "4 · Decode", ["#lens"])
    last = int(page.locator("#step input[type=number]").input_value())     # the slider stands on the last step
    assert last >= 2
    open_tab(page, "5 · Speed", ["#profile-decode"])
    assert f"step {last} of" not in page.locator("#profile-note").inner_text()   # after the run: the middle step
    page.click("#profile-run")
    page.wait_for_function("(k) => (document.querySelector('#profile-note')?.innerText || '').includes(`step ${k} of`)",
                           arg=last, timeout=120_000)
