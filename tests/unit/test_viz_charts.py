"""Every chart builds a schema-valid Vega-Lite spec (altair validates in to_dict) holding the
expected rows, for both recorded traces and both languages; errors are ValueErrors."""

from __future__ import annotations

import json

import altair as alt
import pytest

from tests.unit.test_viz_data import TRACES, load, long_prompt_trace, playground_rows
from viz.charts import attention, decode, kv, sampling, speed
from viz.text.labels import label

CASES = [(name, lang) for name in TRACES for lang in ("en", "zh")]


def spec(chart) -> dict:
    assert isinstance(chart, alt.TopLevelMixin)
    result = chart.to_dict()  # validates against the Vega-Lite schema
    json.dumps(result, allow_nan=False)  # the browser parses strict JSON: a NaN blanks the chart
    return result


def rows_with(spec_: dict, *fields: str) -> list[dict]:
    """The one dataset whose rows have all `fields`."""
    found = [rows for rows in spec_["datasets"].values() if rows and all(f in rows[0] for f in fields)]
    assert len(found) == 1, [list(r[0]) for r in spec_["datasets"].values()]
    return found[0]


def test_theme_is_readable_on_a_projector():
    config = spec(alt.Chart().mark_point())["config"]
    assert config["axis"]["labelFontSize"] >= 13 and config["axis"]["titleFontSize"] >= 13
    assert config["title"]["fontSize"] >= 16 and config["legend"]["labelFontSize"] >= 13


@pytest.mark.parametrize("name,lang", CASES)
def test_attention_charts(name, lang):
    t = load(name)
    n = t.attention.prefill_tokens
    for head in (None, 2):
        cells = rows_with(spec(attention.heatmap(t, 3, head, lang)), "q", "k", "w")
        assert 0 < len(cells) <= n * (n + 1) // 2
        assert all(c["k"] <= c["q"] for c in cells)
    d = spec(attention.head_view(t, 5, None, n - 1, lang))
    assert len(rows_with(d, "pos", "show_left")) == n
    last = len(t.steps) - 1
    row = rows_with(spec(attention.attention_row(t, last, 10, 1, lang)), "pos", "source")
    assert len(row) == t.steps[last].kv_tokens == n + last
    assert sum(r["w"] for r in row) == pytest.approx(1, abs=0.01)


@pytest.mark.parametrize("name,lang", CASES)
def test_decode_charts(name, lang):
    t = load(name)
    for i in (0, len(t.steps) - 1):
        step = t.steps[i]
        d = spec(decode.candidates_chart(t, i, lang))
        bars = rows_with(d, "which", "p")
        ids = {r["id"] for r in bars}
        extra = step.id not in {c.id for c in step.candidates}
        assert len(ids) == len(step.candidates) + extra
        assert [r["id"] for r in bars if r["chosen"]] == [step.id, step.id]
        assert f"{step.chosen_rank + 1}" in json.dumps(d["title"], ensure_ascii=False)
        lens = rows_with(spec(decode.lens_chart(t, i, lang)), "layer", "guess")
        assert sorted(r["layer"] for r in lens) == list(range(t.model.layers))
    entropy = rows_with(spec(decode.entropy_chart(t, lang)), "nats")
    assert len(entropy) == 2 * len(t.steps)


@pytest.mark.parametrize("name,lang", CASES)
def test_kv_charts(name, lang):
    t = load(name)
    d = spec(kv.kv_growth_chart(t, lang))
    assert len(rows_with(d, "kv_bytes", "size")) == len(t.steps)
    sources = {r["source"] for rows in d["datasets"].values() for r in rows}
    assert sources == {label("measured", lang), label("formula", lang)}
    rows = [{"model": m, "context": c, "kv_bytes": per * c, "weights_bytes": w, "measured": c == 4096}
            for m, per, w in (("SmolLM2-135M", 46080, 538060032), ("Llama-3.1-8B", 131072, 16 * 2 ** 30))
            for c in (4096, 32768, 131072)]
    assert len(rows_with(spec(kv.projection_chart(rows, lang)), "context_name")) == 6
    table = kv.projection_table(rows, lang)
    assert table.shape == (6, 7) and table.iloc[0, 2] == "180 MiB"


@pytest.mark.parametrize("name,lang", CASES)
def test_speed_charts(name, lang):
    t = load(name)
    bars = rows_with(spec(speed.timeline_chart(t, lang)), "lane", "start_ms")
    assert len(bars) == len(t.steps) + 1  # the prefill bar, then one per step
    assert bars[0]["t_ms"] == pytest.approx(t.summary.ttft_ms)
    assert [b["t_ms"] for b in bars[1:]] == pytest.approx([s.t_ms for s in t.steps])
    assert len(rows_with(spec(speed.step_times_chart(t, lang)), "forward_ms")) == len(t.steps)
    rows = [{"prompt_tokens": n, "ttft_ms": 20 + n, "prefill_ms": 10 + n} for n in (16, 64, 256)]
    assert len(rows_with(spec(speed.ttft_vs_length_chart(rows, lang)), "measure")) == 6
    runs = [dict(r, runs=run) for run in ("cache on", "cache off") for r in rows]
    assert len(rows_with(spec(speed.ttft_vs_length_chart(runs, lang)), "measure")) == 12


@pytest.mark.parametrize("name,lang", CASES)
def test_sampling_chart(name, lang):
    t = load(name)
    rows = playground_rows(t, 0, 0.8, 5, 0.9)
    data = rows_with(spec(sampling.playground_chart(rows, lang)), "stage", "status")
    assert len(data) == 4 * len(rows)


def test_errors_are_value_errors():
    t = load("trace_en_sampled.json")
    with pytest.raises(ValueError):
        attention.attention_row(t, 0, 30, None)
    with pytest.raises(ValueError):
        attention.head_view(t, 0, None, 45)
    with pytest.raises(ValueError):
        decode.candidates_chart(t, -1)
    with pytest.raises(ValueError):
        kv.projection_chart([])
    with pytest.raises(ValueError):
        speed.ttft_vs_length_chart([{"prompt_tokens": 1}])
    t.attention = None
    for call in (lambda: attention.heatmap(t, 0, None), lambda: attention.head_view(t, 0, 0, 0),
                 lambda: attention.attention_row(t, 0, 0, None)):
        with pytest.raises(ValueError, match="attention"):
            call()
    t.steps = []
    for call in (lambda: speed.timeline_chart(t), lambda: kv.kv_growth_chart(t),
                 lambda: decode.lens_chart(t, 0)):
        with pytest.raises(ValueError):
            call()


def test_long_prompt_heatmap_stays_small():
    """256 prompt tokens: lower triangle, cells < 1e-3 dropped, labels sent once (as a param)."""
    t = long_prompt_trace(256)
    d = spec(attention.heatmap(t, 0, None))
    cells = rows_with(d, "q", "k", "w")
    assert len(cells) <= 256 * 257 // 2
    assert len(json.dumps(d)) < 1_500_000
    assert "Lower triangle" in json.dumps(d["title"]) and "first 256 of 276" in json.dumps(d["title"])
    head_view = spec(attention.head_view(t, 1, 3, 200))
    shown = [r for r in rows_with(head_view, "pos", "show_left") if r["show_left"]]
    assert 10 < len(shown) < 80  # labels thinned so they never overlap

