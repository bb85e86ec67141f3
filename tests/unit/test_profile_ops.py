"""The profile's arithmetic (engine/profile/ops.py) against a hand calculation for SmolLM2-135M, and its
charts (viz/charts/profile.py) from the recorded profile, in both languages."""

import json

import pytest

from engine.profile.ops import LLAMA_OPS, Dims, bound, layer_costs, model_costs, predicted
from tests.paths import ROOT
from viz.charts import profile as charts

# SmolLM2-135M's config: 30 layers, hidden 576, 9 heads of 64, 3 KV heads, MLP 1536, vocabulary 49,152
SMOL = Dims(layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64, intermediate=1536, vocab=49152)
PARAMETER_BYTES = 538_060_032         # what the loaded model reports (fp32, tied embeddings), in every trace


def test_one_decode_layer_by_hand():
    # one new token (T = 1) attending over 41 cached positions (S = 41), float32 (4 bytes)
    c = layer_costs(SMOL, t=1, s=41, b=4)
    assert c["q_proj"] == (2 * 576 * 576, 4 * (576 * 576 + 576 + 576))                  # 663,552 FLOPs; 1,331,712 B
    assert c["k_proj"] == c["v_proj"] == (2 * 576 * 192, 4 * (576 * 192 + 576 + 192))   # kv heads: 3 x 64 = 192
    assert c["o_proj"] == c["q_proj"]
    assert c["gate_proj"] == c["up_proj"] == (2 * 576 * 1536, 4 * (576 * 1536 + 576 + 1536))
    assert c["down_proj"] == (2 * 1536 * 576, 4 * (1536 * 576 + 1536 + 576))
    # Q·Kᵀ and ·V: 2 x 9 heads x 41 keys x 64 each, the softmax, RoPE on q and k;
    # bytes: q in, K and V of 41 positions (3 KV heads), the output, the new K and V
    assert c["attention"] == (4 * 9 * 41 * 64 + 5 * 9 * 41 + 6 * (576 + 192),
                              4 * (576 + 2 * 41 * 192 + 576 + 2 * 192))
    assert c["input_norm"] == c["post_norm"] == (4 * 576, 4 * (2 * 576 + 576))
    assert c["act_mul"] == (5 * 1536, 4 * 3 * 1536) and c["residual"] == (2 * 576, 4 * 6 * 576)
    assert set(c) == set(LLAMA_OPS)


def test_the_weights_the_ops_read_are_the_model():
    # every weight is read once per pass: the layers' matrices and norms, the head (tied with the
    # embedding) and the final norm add up to the parameter bytes of the loaded model exactly
    c = layer_costs(SMOL, t=1, s=1, b=4)
    activations = {"q_proj": 576 + 576, "k_proj": 576 + 192, "v_proj": 576 + 192, "o_proj": 576 + 576,
                   "gate_proj": 576 + 1536, "up_proj": 576 + 1536, "down_proj": 1536 + 576,
                   "input_norm": 2 * 576, "post_norm": 2 * 576}
    per_layer = sum(c[op][1] - 4 * n for op, n in activations.items())
    m = model_costs(SMOL, t=1, b=4)
    head = m["lm_head"][1] - 4 * (576 + 49152)
    final_norm = m["final_norm"][1] - 4 * 2 * 576
    assert 30 * per_layer + head + final_norm == PARAMETER_BYTES


def test_prefill_matmuls_are_compute_bound_and_decode_memory_bound():
    peak, bandwidth = 150e9, 29e9                    # about this machine: a ridge at ~5 FLOP per byte
    prefill = {r["op"]: r for r in predicted(SMOL, t=64, s=64, b=4, peak_flops=peak, bandwidth=bandwidth)}
    decode = {r["op"]: r for r in predicted(SMOL, t=1, s=65, b=4, peak_flops=peak, bandwidth=bandwidth)}
    assert prefill["gate_proj"]["bound"] == "compute" and decode["gate_proj"]["bound"] == "memory"
    assert decode["lm_head"]["predicted_ms"] == pytest.approx(49152 * 576 * 4 / bandwidth * 1000, rel=1e-2)
    assert bound(1e9, 1e6, 1e12, 1e12) == (1.0, "compute") and bound(1e6, 1e9, 1e12, 1e12) == (1.0, "memory")
    rows = predicted(SMOL, t=1, s=65, b=4, peak_flops=peak, bandwidth=bandwidth)
    assert len(rows) == 30 * len(LLAMA_OPS) + len(model_costs(SMOL, 1, 4))


RECORDED = sorted((ROOT / "assets" / "profile").glob("*-next.json"))


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_the_recorded_profile_adds_up_and_draws(path):
    profile = json.loads(path.read_text(encoding="utf-8"))
    for phase in ("prefill", "decode"):
        p = profile["phases"][phase]
        in_pass = sum(r["measured_ms"] for r in p["rows"] if r["op"] not in ("sampling", "watching"))
        assert in_pass == pytest.approx(p["ops_sum_ms"])
        # the ops add up to the hooked pass they were timed in (medians of separate repeats: within 10 %)
        assert in_pass == pytest.approx(p["hooked_ms"], rel=0.10)
        for lang in ("en", "zh"):
            frame = charts.ops_frame(profile, phase, lang)
            assert len(frame) == len([o for o in p["ops"] if o["op"] in charts.PASS_OPS]) == 19
            charts.profile_chart(profile, phase, lang).to_dict()
    for lang in ("en", "zh"):
        charts.projection_chart(profile, lang).to_dict()
    assert all(r["projection"] for r in profile["projection"])


def test_no_profile_is_said_not_drawn():
    with pytest.raises(ValueError):
        charts.ops_frame(None, "decode", "zh")
