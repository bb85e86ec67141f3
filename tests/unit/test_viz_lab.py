"""Lab charts and tables from a recorded result (`python -m engine lab --quick --json`), in both
languages, including the cases a live run can produce: a format unavailable here, a stopped run."""

import copy
import json

import pandas as pd
import pytest

from viz.charts import lab, lab_roofline, lab_weights
from viz.text.labels import LABELS, label
from tests.paths import ROOT, FIXTURES

FIXTURE = FIXTURES / "lab_quick.json"
CHARTS = (lab.kv_chart, lab.attention_chart, lab_weights.weights_chart, lab_roofline.roofline_chart)
TABLES = (lab.kv_table, lab.attention_table, lab_weights.weights_table, lab_roofline.roofline_table)


@pytest.fixture(scope="module")
def result():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def strict(chart) -> str:
    """The chart's Vega-Lite JSON; a NaN or infinity would blank the chart in the browser."""
    return json.dumps(chart.to_dict(), allow_nan=False, ensure_ascii=False)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chart_table_and_summary(result, lang):
    for draw in CHARTS:
        strict(draw(result, lang=lang))
    for make in TABLES:
        frame = make(result, lang=lang)
        assert isinstance(frame, pd.DataFrame) and not frame.empty
    for name, summary in lab.SUMMARIES.items():
        text = summary(result, lang)
        assert text and "{" not in text and "nan" not in text.lower(), (name, text)


def test_chinese_text_is_chinese(result):
    spec = strict(lab.kv_chart(result, lang="zh"))
    assert "开启缓存" in spec and "关闭缓存" in spec
    assert "权重" in strict(lab_weights.weights_chart(result, lang="zh"))


def test_kv_chart_shows_both_modes_and_the_speedup(result):
    spec = strict(lab.kv_chart(result))
    runs = result["kv_cache"]["speedup_spread"]["runs"]          # the title says the repeats' median speed-up
    assert f"{(sorted(runs)[(len(runs) - 1) // 2] + sorted(runs)[len(runs) // 2]) / 2:.2f}×" in spec
    values = [v for d in lab.kv_chart(result).to_dict()["datasets"].values() for v in d]
    assert {v["mode"] for v in values} == {"cache on", "cache off"}
    assert len(values) == 2 * (result["kv_cache"]["new_tokens"] - 1)     # decode steps of each mode


def test_attention_chart_has_the_matrix_line_and_says_fa2_is_unavailable(result):
    spec = strict(lab.attention_chart(result))
    assert "score matrix, one layer" in spec
    assert "FlashAttention-2: not available here" in spec


def test_unavailable_format_keeps_its_row_with_the_reason(result):
    changed = copy.deepcopy(result)
    rows = changed["weights"]["rows"]
    rows[-1] = {"format": "nf4", "available": False, "reason": "bitsandbytes has no 4-bit kernel here"}
    spec = strict(lab_weights.weights_chart(changed))
    assert "bitsandbytes has no 4-bit kernel here" in spec and "not available here" in spec
    table = lab_weights.weights_table(changed)
    assert table.iloc[3, 1] == "—" and "no 4-bit kernel" in table.iloc[3, -1]
    assert "4-bit (nf4)" in list(table.iloc[:, 0])


def test_stopped_run_still_draws(result):
    changed = copy.deepcopy(result)
    kv = changed["kv_cache"]
    del kv["runs"]["cache_off"]
    kv.update(partial=True, speedup=None, identical_tokens=None)
    spec = strict(lab.kv_chart(changed))
    assert "Stopped early" in spec
    assert lab.kv_summary(changed) == label("lab_partial")


def test_missing_section_says_to_run_it(result):
    with pytest.raises(ValueError, match="Press Run"):
        lab.attention_chart({k: v for k, v in result.items() if k != "attention"})


def test_roofline_for_each_model_flags_projections(result):
    models = lab_roofline.roofline_models(result)
    assert models[0] == "SmolLM2-135M-Instruct" and "Llama-3-70B" in models
    own = strict(lab_roofline.roofline_chart(result, model=models[0]))
    assert "measured here" in own and "projection" not in lab_roofline.roofline_chart(result, model=models[0]).to_dict()["title"]["text"]
    big = lab_roofline.roofline_chart(result, model="Llama-3-70B").to_dict()
    assert "projection" in big["title"]["text"] and "does not fit" in strict(lab_roofline.roofline_chart(result, model="Llama-3-70B"))
    table = lab_roofline.roofline_table(result, model=models[0])
    measured = table[label("lab_measured_pair", "en")]
    assert " · " in measured.iloc[0] and set(measured.iloc[1:]) == {"projection"}   # only this machine measured
    assert len(table.columns) == 6                   # fits the lab's column (the model is in the title)
    zh = lab_roofline.roofline_table(result, model=models[0], lang="zh")
    assert zh.iloc[0, 0].startswith("本机（CPU，") and "this machine" not in strict(
        lab_roofline.roofline_chart(result, model=models[0], lang="zh"))


def test_every_lab_label_has_both_languages():
    lab_keys = [k for k in LABELS if k.startswith("lab_")]
    assert len(lab_keys) > 50
    for key in lab_keys:
        assert LABELS[key].get("en") and LABELS[key].get("zh"), key


def test_the_quality_line_reads_the_measured_agreement():
    """The quantization text states the measured numbers and the baseline, not "a little"."""
    import json
    recorded = json.loads((ROOT / "assets" / "lab" / "recorded.json").read_text())
    rows = {r["format"]: r for r in recorded["weights"]["rows"]}
    for lang in ("en", "zh"):
        line = lab_weights.quality_line(recorded, lang)
        assert f"{rows['nf4']['top1_agreement']:.1%}" in line and f"{rows['nf4']['mean_kl']:.3f}" in line
        assert "fp32" in line and "bf16" in line
