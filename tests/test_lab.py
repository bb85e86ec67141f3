"""The acceleration lab (engine/lab): real measurements at quick sizes, and the quality metric checked
against itself (fp32 vs fp32) and against a deliberately damaged copy of the model."""

import copy
import json
import threading

import pytest
import torch

from engine.errors import InvalidRequest
from engine.lab import run_lab
from engine.lab import kernels, kv_cache, roofline, weights
from engine.lab.measure import peak_bytes, spread


@pytest.fixture(scope="module")
def quick(engine):
    """One quick run of all four experiments, shared by the checks below (~1 minute here)."""
    seen = []
    result = run_lab(engine, quick=True, progress=lambda f, text: seen.append((f, text)))
    result["_progress"] = seen
    return result


def quality_texts(engine):
    return [engine.encode(t, templated=True) for t in weights.QUALITY_TEXTS[:2]]


def test_fp32_against_itself_agrees_fully(engine):
    texts = quality_texts(engine)
    first = [weights.all_logits(engine.model, ids, engine.lock) for ids in texts]
    second = [weights.all_logits(engine.model, ids, engine.lock) for ids in texts]   # real second passes
    q = weights.next_token_quality(first, second)
    assert q["top1_agreement"] == 1.0 and q["mean_kl"] == 0.0
    assert q["positions"] == sum(len(t) for t in texts)


def test_perturbed_model_agrees_less(engine):
    texts = quality_texts(engine)
    reference = [weights.all_logits(engine.model, ids, engine.lock) for ids in texts]
    with engine.lock:
        damaged = copy.deepcopy(engine.model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for layer in damaged.model.layers[:10]:             # noise on the MLP output of ten layers
            w = layer.mlp.down_proj.weight
            w.add_(torch.randn(w.shape, generator=generator) * w.std() * 1.5)
    q = weights.next_token_quality(reference, [weights.all_logits(damaged, ids) for ids in texts])
    del damaged
    assert q["top1_agreement"] < 0.9 and q["mean_kl"] > 0.05, q


def test_quality_metric_on_known_distributions():
    p = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    q = torch.tensor([[0.0, 2.0, -1.0], [0.0, 1.0, 0.0]])
    out = weights.next_token_quality([p], [q])
    assert out["top1_agreement"] == 0.5
    lp, lq = torch.log_softmax(p[0].double(), -1), torch.log_softmax(q[0].double(), -1)
    assert out["mean_kl"] == pytest.approx(float((lp.exp() * (lp - lq)).sum()) / 2)


def test_peak_memory_sees_a_large_temporary():
    big = 64 * 2**20
    peak, method, _ = peak_bytes(lambda: torch.ones(big // 4).sum(), "cpu")
    assert big <= peak < big * 1.5, (peak, method)


def test_spread_reports_median_and_range():
    assert spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "runs": [3.0, 1.0, 2.0]}


def test_unknown_experiment_is_rejected(engine):
    with pytest.raises(InvalidRequest):
        run_lab(engine, only=["warp_drive"])


def test_roofline_bound_math():
    hw = {"bandwidth_bytes_s": 1e9, "peak_flops": 1e12, "memory_bytes": 1e10}
    model = {"parameters": 1e9, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 8, "bytes_per_value": 2}
    b = roofline.bounds(model, hw, prompt_tokens=100, new_tokens=10)
    flops = 2 * 1e9 * 100 + 4 * 2 * 100 ** 2 * 4 * 8
    assert b["prefill_flops"] == flops
    assert b["ttft_bound_ms"] == pytest.approx(max(flops / 1e12, 2e9 / 1e9) * 1000)
    kv = 2 * 2 * 2 * 8 * 2 * (100 + 5)
    assert b["kv_bytes"] == kv and b["tpot_bound_ms"] == pytest.approx((2e9 + kv) / 1e9 * 1000)
    # untied embeddings: the input table is a lookup and the output head runs for the last token only
    untied = roofline.bounds({**model, "vocab": 1000, "hidden_size": 100, "tied": False}, hw, 100, 10)
    assert untied["prefill_flops"] == flops - 2 * 2 * 1000 * 100 * 100 + 2 * 1000 * 100
    assert untied["weight_bytes_read"] == 2e9 - 1000 * 100 * 2 and untied["weight_bytes"] == 2e9


# --- one quick run of everything --------------------------------------------------------------
def test_lab_json_has_what_the_bars_ask_for(quick):
    result = {k: v for k, v in quick.items() if k != "_progress"}
    json.dumps(result, allow_nan=False)
    assert set(result["experiments"]) == {"kv_cache", "attention", "weights", "roofline"}
    assert result["partial"] is False
    assert result["kv_cache_speedup"] == result["kv_cache"]["speedup"]
    fractions = [f for f, _ in quick["_progress"]]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1


def test_kv_cache_runs_give_identical_tokens(quick):
    kv = quick["kv_cache"]
    assert kv["identical_tokens"] is True
    # the speedup itself (2.9x here) is a measurement for `python -m engine lab`, not a test bar
    assert kv["speedup"] > 0 and kv["speedup"] == pytest.approx(
        kv["runs"]["cache_off"]["e2e_ms"] / kv["runs"]["cache_on"]["e2e_ms"], rel=1e-6)
    for run in kv["runs"].values():
        assert len(run["step_ms"]) == kv["new_tokens"] and run["runs_measured"] == kv["repeats"]
        assert run["spread"]["e2e_ms"]["min"] <= run["e2e_ms"] <= run["spread"]["e2e_ms"]["max"]
    assert kv["runs"]["cache_off"]["kv_tokens"] == [0] * kv["new_tokens"]


def test_attention_kernels_at_three_lengths(quick):
    att = quick["attention"]
    assert att["implementations"][:2] == ["eager", "sdpa"]
    assert any(u["implementation"] == "flash_attention_2" for u in att["unavailable"]) or \
        "flash_attention_2" in att["implementations"]
    for impl in att["implementations"]:
        rows = [r for r in att["rows"] if r["implementation"] == impl]
        assert len(rows) >= 3
        for r in rows:
            assert r["ms"] > 0 and r["peak_bytes"] > 0 and len(r["spread"]["ms"]["runs"]) == att["repeats"]
            assert r["matches_eager"] and r["same_top1_as_eager"]
            assert r["attention_matrix_bytes"] == 9 * r["tokens"] ** 2 * 4     # SmolLM2: 9 heads, fp32


def test_weight_formats(quick):
    rows = {r["format"]: r for r in quick["weights"]["rows"]}
    assert list(rows) == ["fp32", "bf16", "int8", "nf4"]
    fp32 = rows["fp32"]
    assert fp32["top1_agreement"] == 1.0 and fp32["mean_kl"] == 0.0
    for r in rows.values():
        if not r["available"]:
            assert r["reason"]
            continue
        assert r["weight_bytes"] > 0 and r["tpot_ms"] > 0 and 0 <= r["top1_agreement"] <= 1 and r["mean_kl"] >= 0
    assert rows["bf16"]["weight_bytes"] == pytest.approx(fp32["weight_bytes"] / 2, rel=0.01)
    for fmt in ("int8", "nf4"):
        if rows[fmt]["available"]:
            assert rows[fmt]["weight_bytes"] < rows["bf16"]["weight_bytes"]
    assert quick["weights"]["gguf"]["bytes"] > 0


def test_roofline_rows(quick):
    roof = quick["roofline"]
    here = [r for r in roof["rows"] if not r["projection"]]
    assert len(here) == 1 and here[0]["this_model"] and here[0]["hardware_measured"]
    assert here[0]["ttft_ratio"] > 0.5 and here[0]["tpot_ratio"] > 0.5     # a bound cannot be beaten by much
    gpus = {h["name"] for h in roof["hardware"] if not h["measured"]}
    assert gpus == {"V100 SXM2", "A100 SXM 80GB", "H100 SXM", "H200 SXM"}
    assert all(r["projection"] for r in roof["rows"] if r is not here[0])
    assert {r["model"] for r in roof["rows"]} >= {"Llama-3-8B", "Llama-3-70B"}


def test_stop_returns_partial_results(engine):
    cancel = threading.Event()

    def progress(fraction, text):
        if "run 1" in text:
            cancel.set()                                     # press Stop during the first timed run

    result = kernels.run(engine, quick=True, progress=progress, cancel=cancel, lengths=(16, 32, 48))
    assert result["partial"] is True and result["rows"] == []
    result = kv_cache.run(engine, new_tokens=2, repeats=1, cancel=cancel)
    assert result["partial"] is True and result["speedup"] is None


def test_host_caps_the_lab_sizes(engine, monkeypatch):
    """TBT_LAB_MAX_TOKENS / TBT_LAB_SECONDS (Limits.lab_*) bound what a visitor's lab run measures."""
    import dataclasses
    monkeypatch.setattr(engine, "limits", dataclasses.replace(engine.limits, lab_max_prompt_tokens=64,
                                                              lab_seconds=20))
    result = kernels.run(engine, quick=True, repeats=1)
    assert result["lengths"] == [32, 64] and max(result["measured_lengths"]) <= 64
