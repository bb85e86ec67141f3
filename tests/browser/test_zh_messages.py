"""The page in Chinese says every refusal in Chinese, where the visitor acted: an empty prompt and an
over-long one under the prompt box, a file that is not a trace and a hostile trace on the upload
box; and the API answers a refused argument in Chinese when asked to (Accept-Language: zh).

On the session's app as shipped (its prompt cap the default 20,000 characters). Screenshots of
each message land in test-output/browser/zh-message-*.png; look at them after changing a message.
"""

import json
import re

import pytest
from gradio_client import Client

from tests.browser.controls import first_draw
from tests.paths import FIXTURES

pytestmark = pytest.mark.browser

# a sentence of English: three words of Latin letters in a row (names like attention.prefill_tokens
# or "JSON" inside a Chinese sentence are not one)
ENGLISH = re.compile(r"\b[A-Za-z]{2,}(?:[ ,;:]+[A-Za-z]{2,}){2,}\b")
HAN = re.compile(r"[\u4e00-\u9fff]")
PRODUCT = "Token by Token"          # the app's name, the same in both languages


@pytest.fixture()
def zh_page(browser, app_url):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(app_url)
        page.wait_for_selector("#prompt textarea", timeout=60_000)
        # the page knows its language and has drawn the recording in it
        page.wait_for_function("() => document.querySelector('#output .tbt-recording')?.innerText.includes('录制')",
                               timeout=90_000)
        # and the model is loaded (the header names its size): a fresh server's first click otherwise
        # waits behind the load in the queue (a clean-clone run timed out once here)
        page.wait_for_function("() => document.body.innerText.includes('亿参数')", timeout=120_000)
        first_draw(page, "zh")
        yield page
    finally:
        context.close()


# the innermost element whose text holds the words (a validation message stays a few seconds)
FIND = """(words) => {
  const hits = [...document.querySelectorAll('body *')].filter(e => e.textContent.includes(words));
  const inner = hits.filter(e => ![...e.children].some(c => c.textContent.includes(words)));
  return inner.length ? inner[0].textContent : null;
}"""


def chinese(text: str) -> bool:
    """A Chinese sentence with no English one in it. The JSON parser's own note on where a file
    broke is quoted as it is, inside its marked parentheses."""
    text = re.sub(r"（解析器的说明：.*?）", "", text.replace(PRODUCT, ""))
    return bool(HAN.search(text)) and not ENGLISH.search(text)


def said(page, words: str, shots, name: str, around: str) -> str:
    """Wait for the message holding `words`; screenshot the block it sits in; return its text."""
    text = page.wait_for_function(FIND, arg=words, timeout=60_000).json_value()
    page.locator(around).screenshot(path=str(shots / f"zh-message-{name}.png"))
    assert chinese(text), text
    return text


def assert_no_english_message(page):
    """No toast and no validation message on the page is an English sentence."""
    for text in page.locator(".toast-body, .validation-error, [class*=validation]").all_inner_texts():
        assert not text.strip() or chinese(text), text


def test_an_empty_and_an_over_long_prompt_are_refused_in_chinese(zh_page, shots):
    page = zh_page
    page.fill("#prompt textarea", "")
    page.click("#run")
    said(page, "提示词是空的", shots, "empty", "#prompt")
    assert_no_english_message(page)
    page.fill("#prompt textarea", "量子" * 10_001)        # 20,002 characters; the shipped cap is 20,000
    page.click("#run")
    text = said(page, "上限是 20,000 个", shots, "too-long", "#prompt")
    assert "20,002" in text
    assert_no_english_message(page)
    page.screenshot(path=str(shots / "zh-message-prompt-page.png"))


def upload(page, path):
    page.get_by_role("tab", name="记录文件").click()
    page.set_input_files("#upload input[type=file]", str(path))


def test_a_file_that_is_not_a_trace_is_refused_in_chinese(zh_page, shots, tmp_path):
    page = zh_page
    bad = tmp_path / "not-a-trace.json"
    bad.write_text('{"schema": "something-else"}')
    upload(page, bad)
    said(page, "不是 Token by Token 保存的记录文件", shots, "not-a-trace", "#upload")
    assert_no_english_message(page)


def test_a_file_that_is_not_json_is_refused_in_chinese(zh_page, shots, tmp_path):
    binary = tmp_path / "picture.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    upload(zh_page, binary)
    said(zh_page, "不是有效的 JSON", shots, "not-json", "#upload")


def test_a_hostile_trace_is_refused_in_chinese(zh_page, shots, tmp_path):
    """A well-typed trace claiming 40,000,000 prompt positions over a 1 KB attention block."""
    page = zh_page
    data = json.loads((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))
    data["attention"]["prefill_tokens"] = 40_000_000
    bad = tmp_path / "hostile.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    upload(page, bad)
    text = said(page, "超出了允许的范围", shots, "hostile", "#upload")
    assert "注意力数据" in text and "40000000" in text and "prefill_tokens" not in text    # the part, not the field
    assert_no_english_message(page)
    page.screenshot(path=str(shots / "zh-message-upload-page.png"))


def test_the_api_refuses_an_argument_in_chinese_when_asked(app_url):
    client = Client(app_url, verbose=False, headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    with pytest.raises(Exception) as info:
        client.predict(prompt="Hello", temperature=-1.0, api_name="/trace")
    text = str(info.value)
    # the setting in the page's words, not the field's name (engine/run/protocol.py)
    assert "温度必须在 [0, 100] 之内" in text and "temperature" not in text and chinese(text), text
    with pytest.raises(Exception) as info:
        client.predict(prompt="", api_name="/trace")
    assert "提示词是空的" in str(info.value)
    with pytest.raises(Exception) as info:           # English stays the default
        Client(app_url, verbose=False).predict(prompt="Hello", temperature=-1.0, api_name="/trace")
    assert "temperature must be in [0, 100]" in str(info.value)
