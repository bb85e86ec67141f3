"""The Trace survives JSON without loss, and bad JSON fails with a TraceFormatError."""

import json
import tracemalloc

import numpy as np
import pytest

from engine import SCHEMA, Settings, Trace, TraceFormatError, run_trace
from engine.schema.packed import PackedRows


@pytest.fixture(scope="module")
def small_trace(engine):
    return run_trace(engine, "什么是量子计算", Settings(max_new_tokens=6, attention=True, logit_lens=True))


def test_round_trip_is_lossless(small_trace):
    text = small_trace.to_json()
    back = Trace.from_json(text)
    assert back == small_trace
    assert back.to_json() == text
    assert json.loads(text)["schema"] == SCHEMA
    np.testing.assert_array_equal(back.attention.steps[2].unpack(), small_trace.attention.steps[2].unpack())


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(schema="other/trace@9"), "not a Token by Token trace"),
    (lambda d: d["summary"].update(new_tokens="6"), "summary.new_tokens"),
    (lambda d: d["steps"][0].pop("id"), "missing field 'id'"),
    (lambda d: d["steps"][1]["candidates"][0].update(p_model=None), "candidates[0].p_model"),
    (lambda d: d["settings"].update(use_cache=1), "settings.use_cache"),
    (lambda d: d["attention"]["prefill"][0].update(data="%%%"), "invalid base64"),
    (lambda d: d.update(steps={}), "expected a list"),
])
def test_malformed_traces_are_rejected(small_trace, mutate, message):
    data = json.loads(small_trace.to_json())
    mutate(data)
    with pytest.raises(TraceFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Trace.from_json(json.dumps(data))


def test_truncated_oversized_and_corrupt(small_trace):
    text = small_trace.to_json()
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        Trace.from_json(text[: len(text) // 2])
    with pytest.raises(TraceFormatError, match="limit"):
        Trace.from_json(text, max_bytes=1000)
    with pytest.raises(TraceFormatError):
        Trace.from_json("[" * 100_000 + "]" * 100_000)
    bad = PackedRows(shape=[10**9, 10**9], data=b"x")
    with pytest.raises(TraceFormatError, match="shape"):
        bad.unpack()
    with pytest.raises(TraceFormatError, match="corrupt"):
        PackedRows(shape=[4], data=b"not zlib").unpack()
    small = PackedRows.pack(np.full((1, 4), 0.25))
    assert small.codec == "zstd" and small.stored_size() == 8
    with pytest.raises(TraceFormatError, match="does not match"):   # a frame that declares another size
        PackedRows(shape=[1000, 1000], data=small.data, codec="zstd").unpack()
    with pytest.raises(TraceFormatError, match="does not match|corrupt"):
        PackedRows(shape=[4], data=b"not zstd", codec="zstd").unpack()
    with pytest.raises(TraceFormatError, match="codec"):
        PackedRows(shape=[1, 4], data=small.data, codec="lz4").unpack()


def test_packed_rows_keep_values_and_sums():
    rng = np.random.default_rng(0)
    rows = rng.dirichlet(np.ones(300), size=(4, 9)).astype(np.float32)
    back = PackedRows.pack(rows).unpack()
    assert np.abs(back - rows).max() < 1 / 4095
    assert np.abs(back.sum(-1) - 1).max() < 1e-3
    half = PackedRows.pack(rows * 0.5).unpack()          # a broken capture stays visible
    assert np.abs(half.sum(-1) - 0.5).max() < 1e-3


@pytest.mark.slow
def test_long_attention_trace_stays_small(engine):
    """256 prompt tokens + 256 new tokens with attention: < 64 MB held in RAM, < 32 MB of JSON."""
    words = "the quick brown fox jumps over the lazy dog while a small bird sings".split()
    prompt = " ".join(words[i % len(words)] for i in range(400))
    ids = engine.encode(prompt, templated=False)
    prompt = engine.tokenizer.decode(ids[:256])
    settings = Settings(max_new_tokens=256, ignore_eos=True, attention=True, chat_template=False)
    tracemalloc.start()
    try:
        trace = run_trace(engine, prompt, settings)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 250 <= trace.prefill.tokens <= 262 and len(trace.steps) == 256
    assert len(trace.attention.steps) == 256 and trace.attention.steps_capped_at is None
    size = len(trace.to_json().encode())
    print(f"\n256+256 attention trace: {held / 1e6:.1f} MB held in RAM, {size / 1e6:.1f} MB JSON")
    assert held < 64e6
    assert size < 32e6
