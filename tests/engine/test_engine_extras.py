"""Engine pieces behind the page: second tokenizer, embeddings, TTFT sweep, sampling playground,
KV projections."""

import pytest

from engine import InvalidRequest, Settings, run_trace
from engine.model.embeddings import embedding_neighbors
from engine.model.other_tokenizer import qwen_tokens
from engine.run.sampling import playground
from engine.schema.specs import PUBLIC_MODELS, kv_projection
from engine.bench.sweep import prompt_of_length, ttft_sweep


def test_qwen_tokenizer_splits_chinese_into_words():
    assert [t.text for t in qwen_tokens("什么是量子计算")] == ["什么是", "量子", "计算"]
    assert [t.text for t in qwen_tokens("Hello, world!")] == ["Hello", ",", " world", "!"]
    emoji = qwen_tokens("👩‍👩‍👧")
    assert b"".join(bytes.fromhex(t.bytes_hex) for t in emoji) == "👩‍👩‍👧".encode()


def test_embedding_neighbors(engine):
    token = engine.encode(" king", templated=True)[0]
    vector, neighbors = embedding_neighbors(engine, token, k=8)
    assert len(vector) == engine.info.hidden_size and len(neighbors) == 8
    assert token not in [n["id"] for n in neighbors]
    cosines = [n["cosine"] for n in neighbors]
    assert cosines == sorted(cosines, reverse=True) and all(-1 <= c <= 1 for c in cosines)
    with pytest.raises(InvalidRequest):
        embedding_neighbors(engine, 10**7)


def test_ttft_sweep_measures_each_length(engine):
    assert abs(len(engine.encode(prompt_of_length(engine, "Hello, world!", 40), templated=True)) - 40) <= 2
    rows = ttft_sweep(engine, "The quick brown fox.", lengths=(8, 64, 256))
    assert [r["prompt_tokens"] for r in rows] == sorted(r["prompt_tokens"] for r in rows)
    assert all(r["ttft_ms"] >= r["prefill_ms"] > 0 for r in rows)
    with pytest.raises(InvalidRequest):
        ttft_sweep(engine, "x", lengths=(0,))


def test_playground_stages(engine):
    trace = run_trace(engine, "Once upon a time", Settings(max_new_tokens=2, top_candidates=30))
    cands = trace.steps[0].candidates
    rows = playground(cands, temperature=1.0, top_k=5, top_p=1.0)
    assert sum(r["kept_top_k"] for r in rows) == 5
    assert sum(r["p_top_k"] for r in rows) == pytest.approx(1.0, abs=1e-5)
    assert sum(r["chosen"] for r in rows) == 1 and [r for r in rows if r["chosen"]][0]["kept_top_p"]
    hot, cold = playground(cands, 2.0, 0, 1.0), playground(cands, 0.3, 0, 1.0)
    assert hot[0]["p_temperature"] < rows[0]["p_temperature"] < cold[0]["p_temperature"]
    nucleus = playground(cands, 1.0, 0, 0.5)
    kept = [r for r in nucleus if r["kept_top_p"]]
    assert sum(r["p_temperature"] for r in kept[:-1]) < 0.5 <= sum(r["p_temperature"] for r in kept) + 1e-6
    greedy = playground(cands, 0.0, 0, 1.0)
    assert greedy[0]["chosen"] and greedy[0]["p_top_p"] == 1.0


def test_kv_projection_uses_public_configs(engine):
    rows = kv_projection(engine.info)
    llama8 = [r for r in rows if r["model"].startswith("Llama-3.1-8B") and r["context"] == 131072][0]
    assert llama8["kv_bytes"] == 2 * 32 * 8 * 128 * 2 * 131072 == 16 * 2**30
    own = [r for r in rows if r["own"] and r["context"] == 4096][0]
    # by hand: SmolLM2-135M keeps K and V for 30 layers x 3 KV heads x 64 dims in float32
    assert own["kv_bytes"] == 2 * 30 * 3 * 64 * 4 * 4096 == 180 * 2**20
    assert {r["model"].split(" ")[0] for r in rows} >= {s.name for s in PUBLIC_MODELS}


def test_each_sampled_step_records_what_the_real_top_p_kept(engine):
    """kept_tokens / kept_mass come from the real cut over the whole vocabulary (not the stored top
    20): the mass reaches top_p, the count is within top-k, and a greedy run records none."""
    from engine import Settings, run_trace
    sampled = run_trace(engine, "Tell me a story.", Settings(max_new_tokens=6, temperature=0.9, top_k=50,
                                                             top_p=0.8, seed=3))
    for s in sampled.steps:
        assert 1 <= s.kept_tokens <= 50 and 0.8 <= s.kept_mass <= 1.0001
        assert s.chosen_p_final > 0
    greedy = run_trace(engine, "Tell me a story.", Settings(max_new_tokens=3))
    assert all(s.kept_tokens is None and s.kept_mass is None for s in greedy.steps)
