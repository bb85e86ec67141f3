"""The engine against plain transformers: same tokens, same logits, hooks that always go away."""

import threading

import pytest
import torch
from transformers import DynamicCache

from engine import Settings, run_trace, stream_trace
from engine.model.hooks import Capture
from engine.model.lens import exported
from tests import numerics

PROMPTS = {
    "english": "Explain why the sky is blue.",
    "chinese": "什么是量子计算",
    "code": "Write a Python function that reverses a linked list.",
}


def hf_greedy(engine, prompt: str, n: int) -> list[int]:
    inputs = engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt",
        return_dict=True)
    out = engine.model.generate(**inputs, max_new_tokens=n, do_sample=False)
    return out[0, inputs["input_ids"].shape[1]:].tolist()


@pytest.mark.numerics
@pytest.mark.parametrize("name", PROMPTS)
def test_greedy_matches_model_generate(engine, name):
    trace = run_trace(engine, PROMPTS[name], Settings(max_new_tokens=64))
    ours, theirs = [s.id for s in trace.steps], hf_greedy(engine, PROMPTS[name], 64)
    gaps = numerics.margins(trace.steps)
    numerics.assert_same_greedy(ours, theirs, gaps)


def test_seeded_sampling_reproduces_itself(engine):
    settings = Settings(max_new_tokens=24, temperature=0.9, top_k=40, top_p=0.95, seed=1234)
    first = run_trace(engine, "Once upon a time", settings)
    again = run_trace(engine, "Once upon a time", settings)
    other = run_trace(engine, "Once upon a time", Settings(**{**settings.__dict__, "seed": 99}))
    assert [s.id for s in first.steps] == [s.id for s in again.steps]
    assert [s.id for s in first.steps] != [s.id for s in other.steps]
    for step in first.steps:   # every sampled token survived the warpers
        assert step.chosen_p_final > 0


@pytest.mark.numerics
def test_cached_logits_match_full_recompute(engine):
    """Decode with the KV cache and without it: the logits at every step agree (fp32: within ORDER of
    their largest magnitude, tests/numerics.py)."""
    ids = engine.encode(engine.apply_template("Tell me about the moon.", Settings()), templated=True)
    cache = DynamicCache(config=engine.model.config)
    logits = engine.forward(torch.tensor([ids]), cache, Capture()).logits
    for k in range(24):
        ids.append(int(logits.argmax()))
        logits = engine.forward(torch.tensor([ids[-1:]]), cache, Capture()).logits
        full = engine.forward(torch.tensor([ids]), None, Capture()).logits
        got, want = logits.cpu().numpy(), full.cpu().numpy()         # the last position's [vocab]
        assert numerics.close(got, want, float(abs(want).max())), (k, numerics.worst(got, want))


@pytest.mark.numerics
def test_no_cache_run_gives_the_same_tokens(engine):
    cached = run_trace(engine, "Hello, world!", Settings(max_new_tokens=16))
    uncached = run_trace(engine, "Hello, world!", Settings(max_new_tokens=16, use_cache=False))
    got, want, gaps = [s.id for s in uncached.steps], [s.id for s in cached.steps], numerics.margins(cached.steps)
    numerics.assert_same_greedy(got, want, gaps)
    assert all(s.kv_bytes == 0 for s in uncached.steps)


def test_kv_bytes_follow_the_formula(engine):
    trace = run_trace(engine, "Hello, world!", Settings(max_new_tokens=12, ignore_eos=True))
    width = engine.model.dtype.itemsize      # from the tensors, not the dtype table the formula uses
    assert width == engine.info.bytes_per_value
    # the formula by hand, from the model's own config (not the engine's ModelInfo.kv_bytes): K and V
    # for every layer and KV head (SmolLM2-135M: 2 x 30 x 3 x 64 x 4 bytes = 46,080 a token)
    config = engine.model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * width
    assert per_token == 46_080
    prompt = trace.prefill.tokens
    for i, step in enumerate(trace.steps):
        assert step.kv_tokens == prompt + i        # step i's forward held the prompt + i fed tokens
        assert step.kv_bytes == per_token * step.kv_tokens
    assert trace.summary.kv_bytes_final == trace.steps[-1].kv_bytes


def test_attention_rows_sum_to_one(engine):
    trace = run_trace(engine, "The cat sat on the mat because", Settings(max_new_tokens=8, attention=True))
    att = trace.attention
    assert len(att.prefill) == engine.info.layers and len(att.steps) == len(trace.steps)
    for block in att.prefill:
        maps = block.unpack()                                   # [heads, n, n]
        assert maps.shape == (engine.info.heads, att.prefill_tokens, att.prefill_tokens)
        assert abs(maps.sum(-1) - 1).max() < 1e-3
        assert abs(torch.triu(torch.from_numpy(maps), diagonal=1)).max() == 0   # causal
    for i, block in enumerate(att.steps):
        rows = block.unpack()                                   # [layers, heads, keys]
        assert rows.shape == (engine.info.layers, engine.info.heads, trace.prefill.tokens + i)
        assert abs(rows.sum(-1) - 1).max() < 1e-3


@pytest.mark.numerics
def test_attention_capture_does_not_change_tokens(engine):
    plain = run_trace(engine, "What is 2 + 2?", Settings(max_new_tokens=16))
    captured = run_trace(engine, "What is 2 + 2?", Settings(max_new_tokens=16, attention=True, logit_lens=True))
    got, want, gaps = [s.id for s in captured.steps], [s.id for s in plain.steps], numerics.margins(plain.steps)
    numerics.assert_same_greedy(got, want, gaps)
    # the kernel is never switched: SDPA computes the outputs of watched and unwatched runs alike
    assert engine.model.config._attn_implementation == "tbt_sdpa"
    assert captured.observation.kernel == "sdpa" and captured.observation.attention == "sdpa-capture"
    assert plain.observation.attention is None
    lens = exported(engine, captured).steps[0].lens                 # computed from the states the run kept
    assert len(lens) == engine.info.layers
    assert lens[-1].id == captured.steps[0].id                      # the last layer is the model's answer


def _hook_count(model) -> int:
    return sum(len(m._forward_hooks) for m in model.modules())


def test_hooks_are_removed_after_runs_cancels_and_errors(engine):
    # transformers installs its own output-capturing hooks once a pass asks for output_attentions
    # (other tests do): count ours as what is there beyond that baseline
    baseline = _hook_count(engine.model)
    settings = Settings(max_new_tokens=50, attention=True, logit_lens=True, ignore_eos=True)
    run_trace(engine, "Hi", Settings(max_new_tokens=3, attention=True, logit_lens=True))
    assert _hook_count(engine.model) == baseline
    events = stream_trace(engine, "Hi there", settings)
    next(events), next(events), next(events)
    events.close()                                              # what a disconnected client does
    assert _hook_count(engine.model) == baseline

    def broken(*_):
        raise RuntimeError("boom")
    handle = engine.model.get_decoder().norm.register_forward_hook(broken)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            run_trace(engine, "Hi", Settings(max_new_tokens=3, attention=True))
    finally:
        handle.remove()
    assert _hook_count(engine.model) == baseline
    assert engine.model.config._attn_implementation == "tbt_sdpa"


def test_cancel_keeps_the_partial_trace(engine):
    cancel = threading.Event()
    events = stream_trace(engine, "Count from one to one hundred.", Settings(max_new_tokens=200, ignore_eos=True),
                          cancel)
    for event in events:
        if len(event.trace.steps) == 5:
            cancel.set()
    trace = event.trace
    assert trace.summary.stop_reason == "cancelled"
    assert len(trace.steps) == 5

    events = stream_trace(engine, "Count to ten.", Settings(max_new_tokens=200, ignore_eos=True))
    for _ in range(4):
        event = next(events)
    events.close()
    assert event.trace.summary.stop_reason == "cancelled" and len(event.trace.steps) == 3  # prefill + 2 decode


def test_interleaved_runs_do_not_leak_into_each_other(engine):
    """Two runs stepped alternately on one engine (as the side-by-side page does)."""
    a_settings = Settings(max_new_tokens=12, attention=True, logit_lens=True, ignore_eos=True)
    b_settings = Settings(max_new_tokens=12, temperature=0.8, seed=7, ignore_eos=True)
    solo_a = run_trace(engine, "The capital of France is", a_settings)
    solo_b = run_trace(engine, "Write a haiku about rain", b_settings)
    run_a = stream_trace(engine, "The capital of France is", a_settings)
    run_b = stream_trace(engine, "Write a haiku about rain", b_settings)
    done = {}
    while len(done) < 2:
        for name, run in (("a", run_a), ("b", run_b)):
            if name in done:
                continue
            try:
                next(run)
            except StopIteration as stop:
                done[name] = stop.value
    assert [s.id for s in done["a"].steps] == [s.id for s in solo_a.steps]
    assert [s.id for s in done["b"].steps] == [s.id for s in solo_b.steps]
    assert done["b"].attention is None and all(s.lens is None for s in done["b"].steps)
    assert len(done["a"].attention.steps) == 12


def test_stop_reasons(engine):
    assert run_trace(engine, "Hello, world!", Settings(max_new_tokens=64)).summary.stop_reason == "eos"
    assert run_trace(engine, "Hello, world!", Settings(max_new_tokens=2)).summary.stop_reason == "max_tokens"
    trace = run_trace(engine, "List three colours.", Settings(max_new_tokens=64, stop=["\n"]))
    assert trace.summary.stop_reason == "stop" and trace.output_text.endswith("\n")


def test_timing_definitions(engine):
    trace = run_trace(engine, "Hello, world!", Settings(max_new_tokens=10, ignore_eos=True))
    s, steps = trace.summary, trace.steps
    assert s.ttft_ms == steps[0].t_ms > trace.prefill.ms > 0
    assert s.e2e_ms == steps[-1].t_ms
    assert s.tpot_ms == pytest.approx((s.e2e_ms - s.ttft_ms) / (s.new_tokens - 1))
    assert sum(st.ms for st in steps) == pytest.approx(s.e2e_ms)
    assert s.tokens_per_s == pytest.approx(10 / s.e2e_ms * 1000)
