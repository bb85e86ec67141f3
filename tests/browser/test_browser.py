"""The page in a real headless Chromium (Debian's), driven by Playwright: streaming, every chapter's
chart, trace download and re-upload, and injected HTML that must stay text.

Screenshots land in test-output/browser/; look at them after a change to the page.
"""

import json
import time

import pytest

from tests.app.test_bad_inputs import INTERNALS
from tests.unit.test_trace_validate import HOSTILE, THE_ISSUES
from engine.schema.validate import validate
from tests.paths import FIXTURES
from tests.browser.controls import first_draw, frame_loops, set_slider
from tests.browser.marks import expose_views, missing, plots_ready

TABS = [("tokens", "1 · Tokens", ["#embedding"]),
        ("prefill", "2 · Prefill", ["#heatmap", "#head-view"]),
        ("kv", "3 · KV cache", ["#kv-growth", "#kv-projection"]),
        ("decode", "4 · Decode", ["#candidates", "#attention-row", "#lens"]),
        ("speed", "5 · Speed", ["#timeline", "#step-times"]),
        ("sampling", "8 · Sampling", ["#playground"])]
INJECTION = ('<script>alert(1)</script> <img src=x onerror=alert(1)> **bold** [x](javascript:alert(1)) '
             '<b id="injected">bold?</b> {{7*7}} ${7*7}')
# each prompt token chip's own text (not its id), in order
CHIP_TEXTS = "() => [...document.querySelectorAll('#prompt-chips .tbt-chips .tbt-chip > .tbt-text')].map(e => e.textContent)"


def finished(page) -> bool:
    return page.evaluate("() => !!document.querySelector('#output .tbt-output') && "
                         "!document.querySelector('#output .tbt-caret')")


def run_prompt(page, prompt: str, max_tokens: int | None = None) -> dict:
    """Type, run, and watch the stream; returns what was seen while it ran."""
    if max_tokens is not None:
        page.get_by_text("Generation settings").click()
        set_slider(page, "max-new", max_tokens)
    page.fill("#prompt textarea", prompt)
    # the previous run's "every chapter drawn" marker goes, so the wait below is for this run's
    page.evaluate("() => document.querySelector('#output .tbt-rendered')?.remove()")
    page.evaluate(SEE_FIRST_STEPS_JS)
    page.click("#run")
    page.wait_for_function("() => window.tbtFirstSteps", timeout=60_000)
    # the run's .then() draws every chapter and then marks the output as rendered
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=180_000)
    return page.evaluate("() => window.tbtFirstSteps")


# What the page showed when the run's first tokens came, recorded in the page as it changed (read
# afterwards, a loaded machine's 64 tokens could all be there before the test looked)
SEE_FIRST_STEPS_JS = """() => {
  window.tbtFirstSteps = null;
  const out = document.querySelector('#output');
  const watch = new MutationObserver(() => {
    const steps = out.querySelectorAll('.tbt-step').length;
    if (!steps) return;
    const stale = document.querySelector('#stale'), box = stale?.getBoundingClientRect();
    window.tbtFirstSteps = {steps_while_running: steps,
                            caret_while_running: out.querySelectorAll('.tbt-caret').length > 0,
                            stale_banner_while_running: !!(box && box.width && box.height
                                                           && getComputedStyle(stale).visibility !== 'hidden')};
    watch.disconnect();
  });
  watch.observe(out, {childList: true, subtree: true, characterData: true});
}"""


def fork_at_step(page, step: int, key: str) -> None:
    """On Decode: type `step` in the step box and leave it with `key` ("Tab" or "Enter"), wait until
    that step is on show (its facts, and in the same update its candidates in the fork's list, the
    model's second choice selected), fork there, and wait until the chapters show the branch b1."""
    box = page.locator("#step input[type=number]")
    box.fill(str(step))
    box.press(key)
    page.wait_for_selector(f"#step-facts [data-step='{step}']", timeout=30_000)
    page.wait_for_function("() => document.querySelector('#fork-token input')?.value?.startsWith('2.')",
                           timeout=30_000)
    page.click("#fork-run")
    page.wait_for_function("() => document.querySelector('#fork-note')?.innerText.includes('Branch b1')",
                           timeout=180_000)
    page.wait_for_selector(f"#output .tbt-forced[data-step='{step}']", timeout=60_000)


def open_tab(page, title: str, plots: list[str]) -> float:
    """Click a chapter's tab; returns seconds until all its charts drew (svg/canvas inside vega-embed)."""
    start = time.monotonic()
    page.get_by_role("tab", name=title).click()
    for selector in plots:
        page.wait_for_selector(f"{selector} .vega-embed .marks", timeout=30_000)   # the drawn chart
        assert page.locator(f"{selector} .vega-embed .error, {selector} .error").count() == 0
    return time.monotonic() - start


def test_stream_every_chapter_download_and_upload(page, shots, tmp_path):
    seen = run_prompt(page, "什么是量子计算")
    assert seen["steps_while_running"] >= 1 and seen["caret_while_running"], seen
    page.screenshot(path=str(shots / "zh-top.png"))
    assert "什" in page.inner_text("#prompt-chips") and "\ufffd" not in page.inner_text("#prompt-chips")
    timings = {}
    for name, title, plots in TABS:
        timings[name] = open_tab(page, title, plots)
        page.screenshot(path=str(shots / f"zh-{name}.png"), full_page=True)
    print("\nchapter render seconds:", json.dumps({k: round(v, 2) for k, v in timings.items()}))

    page.get_by_role("tab", name="Trace file").click()
    with page.expect_download() as info:
        page.locator("#download a").first.click()
    path = tmp_path / "trace.json"
    info.value.save_as(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema"] == "token-by-token/trace@3" and data["prompt"]["raw"] == "什么是量子计算"

    # a second, English run (short: the first ran the shipped length) replaces the views; re-uploading
    # the Chinese trace brings them back
    run_prompt(page, "Xiao Ming went to the supermarket and bought some apples. Then he", max_tokens=8)
    assert "Then" in page.inner_text("#prompt-chips")
    page.get_by_role("tab", name="Trace file").click()
    page.set_input_files("#upload input[type=file]", str(path))
    page.wait_for_function("() => document.querySelector('#prompt-chips').innerText.includes('什')",
                           timeout=30_000)
    page.get_by_role("tab", name="1 · Tokens").click()
    page.screenshot(path=str(shots / "uploaded-tokens.png"), full_page=True)


def test_a_hostile_file_is_refused_in_the_page(page, app_process, tmp_path):
    """The issue's hostile file (every one is refused in tests/unit/test_trace_validate.py), uploaded as a
    visitor would: a message naming what is wrong, no internal text in it, the server's memory not grown.
    (A file of another schema, refused the same way: tests/browser/test_zh_messages.py, in Chinese.)"""
    name = THE_ISSUES
    doc = json.loads((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))
    HOSTILE[name](doc)
    bad = tmp_path / f"{name}.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    before = app_process.memory_info().rss
    page.get_by_role("tab", name="Trace file").click()
    page.set_input_files("#upload input[type=file]", str(bad))
    page.wait_for_selector("text=not a usable trace", timeout=20_000)
    shown = page.inner_text("#upload")          # said on the upload box itself (its validator)
    # one plain sentence: the part of the file in words, no field path (the API keeps the path)
    assert "not a usable trace" in shown and "attention data" in shown and not INTERNALS.search(shown), shown
    assert app_process.memory_info().rss - before < 200_000_000
    page.reload()                                   # the server is still there: a good file loads
    first_draw(page, timeout_ms=60_000)   # the page's first draw is done
    page.get_by_role("tab", name="Trace file").click()
    page.set_input_files("#upload input[type=file]", str(FIXTURES / "trace_zh.json"))
    page.wait_for_function("() => document.querySelector('#prompt-chips').innerText.includes('什')",
                           timeout=30_000)


def test_layer_controls_follow_an_uploaded_trace_of_a_smaller_model(page, tmp_path):
    """A trace from a 10-layer model: the layer slider's range becomes 0..9 (it was 0..29)."""
    from engine import Trace
    from engine.schema.packed import PackedRows
    trace = Trace.from_json((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))
    trace.model.layers = 10
    att = trace.attention
    att.prefill = att.prefill[:10]
    att.steps = [PackedRows.pack(block.unpack()[:10]) for block in att.steps]
    for step in trace.steps:
        step.lens = [g for g in step.lens or [] if g.layer < 10] or None
    path = tmp_path / "ten-layers.json"
    path.write_text(validate(trace).to_json(), encoding="utf-8")
    page.get_by_role("tab", name="Trace file").click()
    page.set_input_files("#upload input[type=file]", str(path))
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=60_000)
    page.get_by_role("tab", name="2 · Prefill").click()
    page.wait_for_function("() => document.querySelector('#prefill-layer input[type=range]').max === '9'",
                           timeout=20_000)


def test_uploaded_trace_with_html_in_its_texts_stays_text(page, shots, tmp_path):
    """A hostile trace file: token, step and model texts carrying markup are shown as text."""
    data = json.loads((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))
    for token in data["prompt"]["tokens"][:3]:
        token["text"] = '<img src=x onerror=alert(1)><b id="injected">t</b>'
    for step in data["steps"][:3]:
        step["text"] = '<script>alert(1)</script><b id="injected">s</b>'
        for cand in step["candidates"][:2]:
            cand["text"] = '<img src=x onerror=alert(2)>'
    data["model"]["id"] = '<b id="injected">model</b>'
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    page.get_by_role("tab", name="Trace file").click()
    page.set_input_files("#upload input[type=file]", str(path))
    page.wait_for_function("() => document.querySelector('#prompt-chips').innerText.includes('onerror')",
                           timeout=30_000)
    for _, title, plots in TABS:
        open_tab(page, title, plots)
    page.get_by_role("tab", name="4 · Decode").click()
    page.screenshot(path=str(shots / "hostile-upload.png"), full_page=True)
    assert page.dialogs == []
    assert page.locator("#injected").count() == 0 and page.locator("img[src='x']").count() == 0
    assert page.get_by_text("logit_lens", exact=True).count() == 0     # the API's inputs stay hidden


def test_heatmap_at_the_capped_length(page, shots, tmp_path):
    """A prompt of 256+ tokens: the prefill heatmap is capped at 256 positions, draws, and the run's
    file says it was capped (the map holds the first 256 of the prompt's tokens)."""
    long_prompt = " ".join(["the quick brown fox jumps over the lazy dog"] * 30)
    run_prompt(page, long_prompt, max_tokens=4)
    seconds = open_tab(page, "2 · Prefill", ["#heatmap", "#head-view"])
    print(f"\nheatmap at 256 tokens drew in {seconds:.2f} s")
    page.screenshot(path=str(shots / "prefill-256.png"), full_page=True)
    page.get_by_role("tab", name="Trace file").click()
    with page.expect_download() as info:
        page.locator("#download a").first.click()
    info.value.save_as(tmp_path / "long.json")
    data = json.loads((tmp_path / "long.json").read_text(encoding="utf-8"))
    assert len(data["prompt"]["tokens"]) > 256, len(data["prompt"]["tokens"])
    assert data["attention"]["prefill_tokens"] == 256 and data["attention"]["prefill_capped"] is True


def test_injected_html_stays_text(page, shots):
    run_prompt(page, INJECTION, max_tokens=8)
    for _, title, plots in TABS:
        open_tab(page, title, plots)
    page.get_by_role("tab", name="1 · Tokens").click()
    page.screenshot(path=str(shots / "injection-tokens.png"), full_page=True)
    assert page.dialogs == []
    assert page.locator("#injected").count() == 0
    assert page.locator("img[src='x']").count() == 0
    assert page.evaluate("() => [...document.querySelectorAll('script')].some(s => s.textContent.includes('alert(1)'))") is False
    # the markup is on the page as text, character for character, in the prompt's token chips
    shown = "".join(page.evaluate(CHIP_TEXTS)).replace("␣", " ").replace("↵", "\n")
    assert INJECTION in shown, shown


PIXELS_JS = "(sel) => { const c = document.querySelector(sel + ' canvas.marks'); return c ? c.toDataURL() : ''; }"


def pixels(page, selector: str) -> str:
    """What a chart's canvas shows, to tell that it was redrawn."""
    return page.evaluate(PIXELS_JS, selector)


def test_controls_and_clicks_redraw_their_views(page, shots):
    run_prompt(page, "Xiao Ming went to the supermarket and bought some apples. Then he", max_tokens=12)
    # click a prompt token: its embedding and neighbours appear
    page.locator("#prompt-chips .tbt-chip[data-index='25']").click()
    page.wait_for_function("() => document.querySelector('#neighbors').innerText.includes('id 25') || "
                           "document.querySelector('#neighbors').innerText.length > 0")
    first_neighbors = page.inner_text("#neighbors")
    page.locator("#prompt-chips .tbt-chip[data-index='30']").click()
    page.wait_for_function("(before) => document.querySelector('#neighbors').innerText !== before",
                           arg=first_neighbors, timeout=20_000)
    # prefill: another layer and head redraw the heatmap
    open_tab(page, "2 · Prefill", ["#heatmap"])
    before = pixels(page, "#heatmap")
    slider = page.locator("#prefill-layer input[type=number]")
    slider.fill("7")
    slider.press("Tab")          # a slider redraws when let go: here, when its number box is left
    page.wait_for_function(f"(b) => ({PIXELS_JS})('#heatmap') !== b", arg=before, timeout=20_000)
    # click a generated token: the decode chapter jumps to that step
    page.locator("#output .tbt-step[data-step='3']").click()
    open_tab(page, "4 · Decode", ["#candidates"])
    page.wait_for_function("() => document.querySelector('#step input[type=number]').value === '3'",
                           timeout=20_000)
    page.wait_for_function("() => document.querySelector('#step-facts').innerText.includes('3')")
    # sampling: a hotter temperature redraws the playground
    open_tab(page, "8 · Sampling", ["#playground"])
    before = page.inner_text("#survivors")
    box = page.locator("#s-top-k input[type=number]")
    box.fill("3")
    box.press("Enter")
    page.wait_for_function("(b) => document.querySelector('#survivors').innerText !== b", arg=before,
                           timeout=20_000)
    page.screenshot(path=str(shots / "sampling-top-k-3.png"), full_page=True)
    # speed: TTFT at several prompt lengths
    open_tab(page, "5 · Speed", ["#timeline"])
    page.click("#sweep")
    page.wait_for_selector("#sweep-plot .vega-embed .marks", timeout=120_000)
    page.screenshot(path=str(shots / "speed-sweep.png"), full_page=True)


def test_reasoning_columns_stream_side_by_side(page, shots):
    page.get_by_role("tab", name="7 · Reasoning").click()
    assert "Below: a recording" in page.inner_text("#r-note")      # before a run: the recorded comparison
    assert "Checked against the right answer, 12" in page.inner_text("#r-note")
    page.fill("#r-prompt textarea", "What is 17 + 25?")
    page.click("#r-run")
    # both columns have text while both runs are still going (neither waits for the other)
    page.wait_for_function(
        "() => ['#r-normal', '#r-reasoning'].every(id => { const el = document.querySelector(id);"
        " return el && el.querySelector('.tbt-caret') && el.querySelector('.tbt-prose') &&"
        " el.querySelector('.tbt-prose').innerText.trim().length > 0; })", timeout=60_000)
    page.screenshot(path=str(shots / "reasoning-streaming.png"), full_page=True)
    # finished: no caret left, the recording's note replaced by the check of this question's answer
    page.wait_for_function("() => !document.querySelector('#r-normal .tbt-caret, #r-reasoning .tbt-caret') &&"
                           " document.querySelector('#r-note').innerText.includes('right answer, 42')",
                           timeout=180_000)
    page.wait_for_selector("#r-timeline .vega-embed .marks", timeout=30_000)
    assert "Below: a recording" not in page.inner_text("#r-note")      # (the evaluation verdict may quote its recording)
    assert "scaffolded thinking" in page.inner_text("#r-reasoning")
    assert page.locator("#r-reasoning details.tbt-thinking").count() == 1
    page.screenshot(path=str(shots / "reasoning.png"), full_page=True)


def test_before_a_run_the_chapters_show_the_recording(page):
    """No empty boxes on arrival: every chapter shows the walkthrough's recording, and the output
    area says it is one; a run of the visitor's own replaces it."""
    first_draw(page, timeout_ms=30_000)
    assert "recording" in page.inner_text("#output")
    assert page.locator("#prompt-chips .tbt-chip").count() > 10
    open_tab(page, "2 · Prefill", ["#heatmap"])
    open_tab(page, "5 · Speed", ["#timeline", "#step-times"])
    page.get_by_role("tab", name="Trace file").click()
    page.wait_for_selector("#download a", timeout=10_000)          # the recording's own file
    assert "en-next" in page.inner_text("#download")
    loops = frame_loops(page)
    seen = run_prompt(page, "Hi! Tell me about the sea.", max_tokens=24)
    assert page.locator("#output .tbt-recording").count() == 0
    # while it streamed, the chapters said they still showed the previous (recorded) run
    assert seen["stale_banner_while_running"] and page.locator("#stale").is_hidden()
    # and hiding it again left no animation loop behind (a banner unmounted while pending left one a run,
    # for good; the after-run profile's own tracker runs only while it measures)
    settled = [frame_loops(page)]
    deadline = time.monotonic() + 60
    while settled[-1] > loops + 0.5 and time.monotonic() < deadline:
        page.wait_for_timeout(1000)
        settled.append(frame_loops(page))
    assert settled[-1] <= loops + 0.5, (loops, settled)


def test_a_loaded_file_says_so_and_a_clicked_token_moves_every_step_view(page, tmp_path):
    """Loading a file: the status names it and the prompt box holds its prompt. Clicking an answer
    token: Decode comes forward on that step, and Sampling shows the same step."""
    src = FIXTURES / "trace_en_sampled.json"
    path = tmp_path / "my-run.json"
    path.write_bytes(src.read_bytes())
    page.get_by_role("tab", name="Trace file").click()
    page.set_input_files("#upload input[type=file]", str(path))
    page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=60_000)
    # the banner is written by the event after the chapters' (it names the file over their status line)
    page.wait_for_function("() => document.querySelector('#status')?.innerText.includes('Viewing the file')",
                           timeout=30_000)
    assert "my-run" in page.inner_text("#status")
    from engine import Trace
    trace = Trace.from_json(src.read_text(encoding="utf-8"))
    assert page.input_value("#prompt textarea") == trace.prompt.raw
    page.locator("#output .tbt-step[data-step='2']").click()
    page.wait_for_function("() => document.querySelector('#step input[type=number]')?.value === '2'",
                           timeout=15_000)
    page.wait_for_selector("#step-facts", state="visible", timeout=10_000)      # Decode came forward
    page.get_by_role("tab", name="8 · Sampling").click()
    page.wait_for_function("() => document.querySelector('#survivors').innerText.includes('real run')",
                           timeout=15_000)


# Latin words the zh page may show: terms the glossary keeps in English (token, KV, TTFT...),
# units, and names of kernels, formats and tools. A word with a digit in it is a name (SmolLM2,
# fp32, H100) and passes too.
LATIN_ALLOWED = {"token", "Token", "KV", "TTFT", "TPOT", "CPU", "GPU", "SDPA", "FlashAttention", "eager",
                 "logit", "lens", "Logit", "softmax", "Top-k", "Top-p", "top-k", "top-p", "KL", "JSON", "GGUF",
                 "Roofline", "vLLM", "API", "Gradio", "Qwen", "ms", "s", "GiB", "MiB", "KiB", "GB", "KB", "MB",
                 "GFLOP", "FLOP", "SXM", "ln", "e", "nat", "python", "engine", "trace", "lab", "eval", "json",
                 "SGLang", "TGI", "Ollama", "llama.cpp",   # serving engines: names
                 "PyTorch", "Hugging", "Face", "transformers",   # libraries: names
                 "GQA", "ITL",                                    # terms kept in English, like TTFT
                 "RoPE", "MLP", "SiLU",                           # the profile's op names: model parts
                 "generate"}                                      # transformers' function, by name
VISIBLE_TEXT_JS = """() => {
  const out = [];
  // not scanned: visitor and model texts, file names, and screen-reader-only text (Gradio's own
  // status announcements: its zh-CN catalogue lacks "common.complete")
  const skip = 'script, style, textarea, input, code, pre, footer, .gallery, .tbt-chips, .tbt-compare, ' +
               '.tbt-reasoning, #neighbors, #download, #upload';   // #neighbors: vocabulary tokens
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    const box = el && el.getBoundingClientRect();
    if (!el || el.closest(skip) || !box || box.width <= 1 || box.height <= 1) continue;
    const text = walker.currentNode.textContent.trim();
    if (text) out.push(text);
  }
  document.querySelectorAll('.vega-embed svg text').forEach((t) => out.push(t.textContent));
  return out;
}"""


def latin_words(texts: list[str]) -> set[str]:
    import re
    words = set()
    for text in texts:
        text = text.replace("Token by Token", "")                   # the product's name
        text = re.sub(r"<[0-9A-F]{2}(?: [0-9A-F]{2})*>|</?think>", " ", text)   # byte pieces, tags
        # an English gloss after the Chinese term (预填充（Prefill）), a quoted example ("Hello, world!"),
        # key names in the keyboard hint
        text = re.sub(r"（[A-Za-z][A-Za-z\- ]*）|\"[^\"]*\"|PageUp|PageDown", " ", text)
        for word in re.findall(r"[A-Za-z][A-Za-z0-9\-.]*[A-Za-z0-9]|[A-Za-z]", text):
            if word not in LATIN_ALLOWED and not re.search(r"\d", word) and len(word) > 1:
                words.add(word)
    return words


DRAWN_JS = """(tab) => [...tab.querySelectorAll('.js-plotly-plot, .vega-embed')].every(
  (el) => !el.offsetParent || el.querySelector('.marks') || el.querySelector('.error'))"""


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_every_chapter_and_every_step_in_both_languages(browser, app_url, output_dir, locale):
    """The page as a first visitor of each language walks it: every Explore chapter and every
    walkthrough step drawn, no chart failed, each data mark a chart's spec declares drawn on its canvas
    (tests/browser/marks.py; issue 39: chapter 3's projection drew no bars), a screenshot each; on the zh
    page no Latin word outside the allow-list of kept terms, units and names (visitor and model texts
    are not scanned)."""
    from ui.walkthrough.steps import STEPS
    context = browser.new_context(locale=locale, viewport={"width": 1400, "height": 1000})
    page, lang = context.new_page(), locale[:2]
    expose_views(page)
    shots = output_dir / "browser"
    shots.mkdir(exist_ok=True)
    try:
        page.goto(app_url)
        first_draw(page, timeout_ms=60_000)
        texts = page.evaluate(VISIBLE_TEXT_JS)
        tabs, charts, lost = page.locator("#explore-chapters [role=tab]"), 0, {}
        assert tabs.count() == 10                           # nine chapters and the trace file
        for i in range(tabs.count()):
            tabs.nth(i).click()
            page.wait_for_function("() => !document.querySelector('.pending')", timeout=30_000)
            panel = page.locator("#explore-chapters [role=tabpanel]:visible").first
            page.wait_for_function(DRAWN_JS, arg=panel.element_handle(), timeout=30_000)
            assert page.locator("#explore-chapters .vega-embed .error:visible").count() == 0, i
            for plot in plots_ready(page):
                charts += 1
                if gone := missing(plot):
                    lost[f"{i + 1} #{plot['id']}"] = gone
            page.screenshot(path=str(shots / f"walk-{lang}-chapter-{i + 1}.png"), full_page=True)
            texts += page.evaluate(VISIBLE_TEXT_JS)
        assert charts >= 20, f"only {charts} charts were drawn"
        assert not lost, f"marks declared but not drawn ({{mark: (declared, drawn)}}): {lost}"
        page.get_by_role("tab").filter(has_text={"en": "Walkthrough", "zh": "导览"}[lang]).first.click()
        for step in range(len(STEPS)):
            page.wait_for_selector(f"#wt-step-{step}", state="visible", timeout=30_000)
            page.wait_for_function("() => !document.querySelector('.pending:not(.step-button)')", timeout=30_000)
            texts += page.evaluate(VISIBLE_TEXT_JS)
            if step < len(STEPS) - 1:
                page.locator(f"#wt-step-{step} .tbt-next").click()
        left = latin_words(texts) if lang == "zh" else set()
        assert not left, " ".join(sorted(left))
    finally:
        context.close()


def test_a_drag_on_the_decode_slider_costs_one_redraw(page, shots):
    """Dragging the step slider across the whole answer sends the first value and then only the
    last (trigger_mode="always_last"), not one redraw per tick; the view ends on the last step."""
    open_tab(page, "4 · Decode", ["#candidates"])
    joins = []
    page.on("request", lambda r: joins.append(r.url) if "queue/join" in r.url else None)
    track = page.locator("#step input[type=range]").bounding_box()
    y = track["y"] + track["height"] / 2
    page.mouse.move(track["x"] + 2, y)
    page.mouse.down()
    started = time.monotonic()
    ticks = 30
    for i in range(1, ticks + 1):
        page.mouse.move(track["x"] + 2 + (track["width"] - 4) * i / ticks, y)
        page.wait_for_timeout(30)          # a hand's pace: 30 moves in about a second
    page.mouse.up()
    last = page.evaluate("() => document.querySelector('#step input[type=number]').value")
    page.wait_for_function(f"() => document.querySelector('#step-facts').innerText.includes('{last}')",
                           timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#candidates .pending, #step-facts .pending')",
                           timeout=30_000)
    settled = time.monotonic() - started
    print(f"drag of {ticks} ticks: {len(joins)} redraws, settled after {settled:.2f} s")
    assert int(last) > 10 and len(joins) <= 3, (last, joins)


def test_fork_a_run_see_the_tree_and_measure_the_prefix(page, shots, tmp_path):
    """Decode → fork at step 3 with the second candidate: the branch streams, every chapter shows it
    (its chosen token marked), the tree gains a row, the recompute is measured beside the reused
    cache; clicking the run's row shows the run again; the download holds the branch."""
    run_prompt(page, "Xiao Ming went to the supermarket and bought some apples. Then he", max_tokens=12)
    open_tab(page, "4 · Decode", ["#candidates"])
    fork_at_step(page, 3, "Tab")
    page.wait_for_selector("#step-facts [data-step='3']", timeout=30_000)   # Decode stays where it forked
    assert page.locator("#fork-tree .tbt-tree-label").count() == 2
    assert page.locator("#fork-tree .tbt-tree-fork").count() == 1
    page.click("#fork-recompute")
    page.wait_for_function("() => document.querySelector('#fork-note')?.innerText.includes('Recomputing')",
                           timeout=60_000)
    page.locator("#fork").screenshot(path=str(shots / "fork.png"))
    page.get_by_role("tab", name="Trace file").click()
    with page.expect_download() as info:
        page.locator("#download a").first.click()
    info.value.save_as(tmp_path / "forked.json")
    data = json.loads((tmp_path / "forked.json").read_text(encoding="utf-8"))
    assert data["schema"] == "token-by-token/trace@3" and data["branches"][0]["at"] == 3
    assert data["branches"][0]["recompute_ms"] > 0
    page.get_by_role("tab", name="4 · Decode").click()
    page.locator("#fork-tree .tbt-tree-label[data-index='0']").click()
    page.wait_for_function("() => !document.querySelector('#output .tbt-forced')", timeout=30_000)
    # the serving floor serves the tree's lineages as requests: the run and b1 share the prefix's blocks
    page.get_by_role("tab", name="9 · Serving floor").click()
    page.click("#floor-branches")
    page.wait_for_function("""() => { const t = document.querySelector('#floor-verdict').innerText;
                              return t.includes('these 2 requests') && !t.includes('recorded workload'); }""",
                           timeout=240_000)
    table = page.inner_text("#floor-requests-table")
    assert "run" in table and "b1" in table and table.count("yes") == 2
    assert "lineages" in page.inner_text("#floor-ties")
    page.screenshot(path=str(shots / "floor-branches.png"), full_page=True)
