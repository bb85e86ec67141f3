"""Refusals and idle controls as a visitor meets them: a file that is no trace (a .txt, a picture)
is refused in one plain sentence on the upload box, in the page's language, with no toast and no
red "Error" from the browser's own type check; Stop is greyed out while nothing runs."""

import pytest

from tests.app.test_bad_inputs import INTERNALS
from tests.browser.controls import first_draw


@pytest.fixture()
def zh_page(browser, app_url):
    """The session's app in a Chinese browser (the page follows the browser's language)."""
    context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(app_url)
        page.wait_for_function("() => document.querySelector('#output .tbt-recording')?.innerText.includes('录制')",
                               timeout=90_000)
        first_draw(page, "zh")
        yield page
    finally:
        context.close()


def refused_on_the_box(page, tab: str, path, words: str) -> str:
    page.get_by_role("tab", name=tab).click()
    page.set_input_files("#upload input[type=file]", str(path))
    page.wait_for_selector(f"#upload >> text={words}", timeout=20_000)
    shown = page.inner_text("#upload")
    assert page.locator(".toast-body").count() == 0, page.inner_text("body")[:300]
    assert not INTERNALS.search(shown) and "codec" not in shown and "utf-8" not in shown.lower(), shown
    return shown


def test_a_txt_file_is_refused_plainly_on_the_box(page, shots, tmp_path):
    note = tmp_path / "notes.txt"
    note.write_text("my notes about the run\n")
    shown = refused_on_the_box(page, "Trace file", note, "not a usable trace")
    assert "it is not valid JSON" in shown and "Invalid file type" not in shown, shown
    page.screenshot(path=str(shots / "upload-txt-refused.png"))


def test_a_picture_is_refused_plainly_on_the_box_in_chinese(zh_page, shots, tmp_path):
    picture = tmp_path / "photo.json"
    picture.write_bytes(b"\x98\x89PNG\r\n\x1a\n\x00\x00")
    shown = refused_on_the_box(zh_page, "记录文件", picture, "这个文件无法载入")
    assert "它不是有效的 JSON 文件" in shown, shown
    zh_page.screenshot(path=str(shots / "upload-picture-refused-zh.png"))


def test_stop_is_greyed_out_until_a_run_streams(page):
    assert page.locator("#stop").is_disabled()
    page.fill("#prompt textarea", "Hello, world!")
    page.click("#run")
    page.wait_for_selector("#output .tbt-step", timeout=60_000)
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=180_000)
    page.wait_for_function("() => document.querySelector('#stop').disabled", timeout=20_000)
