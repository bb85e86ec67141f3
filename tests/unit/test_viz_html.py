"""HTML views: trace texts are always escaped, characters come back whole, chips carry indexes."""

from __future__ import annotations

import copy
import re

import pytest


from engine.schema.trace import Trace
from tests.unit.test_viz_data import EVIL, TRACES, hostile, load, playground_rows
from viz import html as views
from viz.fmt import fmt_p
from viz.text.labels import label


def every_html(t: Trace, lang: str) -> list[str]:
    step = len(t.steps) - 1
    tokens = t.prompt.tokens
    neighbors = [{"id": tok.id, "text": tok.text, "cosine": 0.5} for tok in tokens[:5]]
    rows = playground_rows(t, step, 0.8, 5, 0.9)
    return [
        views.prompt_html(t, 0, lang), views.prompt_html(t, None, lang),
        views.compare_html(tokens, EVIL[0], tokens[3:], EVIL[1], lang),
        views.output_html(t, step, lang), views.neighbors_html({"id": 1, "text": EVIL[1]}, neighbors, lang),
        views.step_html(t, step, lang), views.survivors_html(rows, {}, lang), views.speed_html(t, lang),
    ]


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_trace_text_is_escaped_everywhere(name, lang):
    t = hostile(load(name))
    for page in every_html(t, lang):
        for evil in EVIL:
            assert evil not in page
        assert "<script" not in page and "<img" not in page
        assert "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")
        if "tbt-speed" not in page:  # the speed cards hold numbers only
            assert "&lt;script&gt;" in page or "&lt;img src=x onerror=alert(1)&gt;" in page


def test_attributes_cannot_be_broken_out_of():
    t = load("trace_en_sampled.json")
    t.prompt.tokens[0].text = '" onmouseover="alert(1)'
    t.steps[0].token = t.steps[0].text = "' autofocus onfocus='alert(1)"
    page = views.prompt_html(t) + views.output_html(t)
    assert 'onmouseover="' not in page and "onfocus='" not in page
    assert "&quot; onmouseover=&quot;alert(1)" in page and "&#x27; autofocus onfocus=&#x27;" in page


def test_zh_prompt_reads_as_its_characters():
    t = load("trace_zh.json")
    page = views.prompt_html(t, lang="zh")
    assert "\ufffd" not in page
    chars = re.findall(r'<span class="tbt-chars">(.*?)</span>', page)
    assert [c for c in chars if len(c) == 1] == ["什", "么", "计", "算"]
    for ch in "什么是量子计算":
        assert ch in page
    assert "<b>7</b>" in page and "<b>11</b>" in page and "<b>41</b>" in page  # chars, raw, templated


@pytest.mark.parametrize("name", TRACES)
def test_prompt_chips_carry_their_index_and_selection(name):
    t = load(name)
    page = views.prompt_html(t, selected=5)
    indexes = [int(i) for i in re.findall(r'data-index="(\d+)"', page)]
    assert indexes == list(range(len(t.prompt.tokens)))
    assert page.count("tbt-chip") >= len(t.prompt.tokens)
    assert re.search(r'class="tbt-chip[^"]*tbt-selected[^"]*" data-index="5"', page)
    special = [i for i, tok in enumerate(t.prompt.tokens) if tok.special]
    for i in special:
        assert re.search(rf'class="tbt-chip tbt-special[^"]*" data-index="{i}"', page)
    assert "␣" in page and "↵" in page  # whitespace made visible


def test_output_chips_phases_and_caret():
    t = load("trace_en_sampled.json")
    done = views.output_html(t, selected=2)
    assert [int(i) for i in re.findall(r'data-step="(\d+)"', done)] == list(range(len(t.steps)))
    assert "tbt-caret" not in done and "tbt-thinking" not in done
    assert label("stop_max_tokens") in done
    running = copy.deepcopy(t)
    running.summary = None
    for s in running.steps[:4]:
        s.phase = "thinking"
    running.steps[4].forced = True
    page = views.output_html(running)
    assert page.index("tbt-thinking") < page.index('data-step="3"') < page.index("tbt-answer")
    assert "tbt-forced" in page and page.rstrip().count("tbt-caret") == 1
    running.steps = []
    assert "tbt-caret" in views.output_html(running)


def test_output_html_renders_a_long_run_whole():
    """~500 tokens, re-rendered per token in the app; its render time is measured by
    `python -m viz.bench --json`, not here (a wall-clock limit in a unit test fails on a busy box)."""
    t = load("trace_en_sampled.json")
    t.steps = [copy.deepcopy(s) for _ in range(20) for s in t.steps]   # ~500 tokens
    for i, s in enumerate(t.steps):
        s.index = i
    page = views.output_html(t)
    assert [int(i) for i in re.findall(r'data-step="(\d+)"', page)] == list(range(len(t.steps)))


def test_render_benchmark_runs_every_view():
    """`python -m viz.bench --json` (timings live there, not in tests) still runs; no limits here."""
    from viz.bench import bench
    views = bench(repeats=1)["views"]
    assert len(views) == 6 and all(v["median_ms"] > 0 for v in views.values())
    assert views["output_html_480_tokens"]["budget_ms"] == 50


def test_speed_cards_handle_missing_figures():
    t = load("trace_zh.json")
    page = views.speed_html(t)
    for text in ("208 ms", "85.4 ms", "806 ms", "9.93 tok/s", "154 ms", "267 tok/s", "vLLM"):
        assert text in re.sub(r"<[^>]+>", "", page)
    t.summary.tpot_ms = None
    assert label("tpot_needs_two") in views.speed_html(t)
    t.summary = None
    page = views.speed_html(t, "zh")
    assert label("running", "zh") in page and label("so_far", "zh") in page
    t.steps, t.prefill = [], None
    assert "—" in views.speed_html(t)


def test_step_card_shows_the_measured_facts():
    t = load("trace_en_sampled.json")
    s = t.steps[3]
    page = views.step_html(t, 3)
    for text in ("30.4%", "52.8%", "1.902 nats", "3.642 nats", "98.4 ms", "67.0 ms", "48", "2.11 MiB"):
        assert text in page, text
    assert s.chosen_rank + 1 == 1
    with pytest.raises(ValueError):
        views.step_html(t, 99)


def test_survivors_count_each_stage():
    t = load("trace_en_sampled.json")
    rows = playground_rows(t, 0, 0.8, 5, 0.5)
    page = views.survivors_html(rows, {"temperature": 0.8, "top_k": 5, "top_p": 0.5})
    kept_k = sum(r["kept_top_k"] for r in rows)
    kept_p = sum(r["kept_top_p"] for r in rows)
    assert f"{kept_k} of {len(rows)}" in page and f"{kept_p} of {len(rows)}" in page
    assert page.count("tbt-removed-k") == len(rows) - kept_k + 1  # + the legend
    assert "tbt-chosen" in page


def test_output_reads_as_prose_with_the_byte_pieces_behind_each_character():
    trace = load("trace_zh.json")
    page = views.output_html(trace)
    # "什" arrives as two generated tokens: the answer shows the character itself (prose), coloured
    # by the probability of both pieces together, and keeps the pieces for hover
    joined = re.findall(r'<span class="tbt-step tbt-joined[^"]*" data-step="(\d+)"[^>]*>(.*?)<span class="tbt-pieces">'
                        r'(.*?)</span></span>', page, flags=re.S)
    assert [text for _, text, _ in joined] == ["什", "么"]    # the cut-off last token stays alone
    first = [s for s in trace.steps if s.text == "什"][0]
    assert joined[0][0] == str(first.index)                  # a click on the character picks its last piece
    pieces = re.findall(r'data-step="(\d+)"', joined[0][2])
    assert pieces == [str(first.index - 1), str(first.index)]
    p = trace.steps[first.index - 1].chosen_p_model * first.chosen_p_model
    assert f"p {fmt_p(p)}" in page
    assert "tbt-group" not in page and "dotted" in page       # the legend says what the underline means


def test_a_card_figure_keeps_its_number_and_unit_on_one_line():
    from viz.html.cards import quantity_html
    assert quantity_html("0.717 tok/s") == '<span class="tbt-qty">0.717<span class="tbt-unit"> tok/s</span></span>'
    zh = quantity_html("8.8 token/秒")
    assert zh.startswith('<span class="tbt-qty">8.8<span class="tbt-unit">') and zh.count("tbt-qty") == 1
    # a line may break between two figures, never inside one; "p95" is a word, not a figure
    assert quantity_html("4.20 ms · p95 6.00 ms").count('class="tbt-qty"') == 2
    assert '<span class="tbt-unit">p95 </span>6.00' in quantity_html("4.20 ms · p95 6.00 ms")
    assert quantity_html("—") == '<span class="tbt-qty">—</span>'


@pytest.mark.parametrize("n", range(1, 10))
def test_the_card_rows_are_balanced_at_every_width(n):
    from viz.html.cards import ROW_MOST, balanced_rows, cards_grid
    for most in ROW_MOST.values():
        rows = balanced_rows(n, most)
        assert sum(rows) == n and max(rows) <= most and max(rows) - min(rows) <= 1
        if n > most:      # never a card alone while another row has room for it
            assert min(rows) >= 2 or most == 1
    grid = cards_grid(['<div class="tbt-card">x</div>'] * n)
    spans = [int(s) for s in re.findall(r"--span-wide:(\d+)", grid)]
    assert len(spans) == n and sum(spans) == 12 * len(balanced_rows(n, ROW_MOST["wide"]))


def test_seven_speed_cards_make_two_full_rows_on_a_wide_page():
    t = load("trace_zh.json")
    spans = [int(s) for s in re.findall(r"--span-wide:(\d+)", views.speed_html(t, "zh"))]
    assert spans == [3, 3, 3, 3, 4, 4, 4]          # 4 + 3, not 6 + 1
    t.reasoning, t.summary.time_to_first_answer_ms = "tags", 100.0      # one card more: 4 + 4
    assert re.findall(r"--span-wide:(\d+)", views.speed_html(t, "zh")) == ["3"] * 8
