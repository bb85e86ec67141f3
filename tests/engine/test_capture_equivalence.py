"""What the engine records equals what transformers itself computes for the same forward:

- attention rows equal the eager implementation's `output_attentions=True` weights, query by query;
- sampled probabilities (`p_final`) equal the processed scores of `model.generate(do_sample=True)`;
- a run stops where `model.generate` stops (the same eos ids, the same tokens).

The engine is used only through its public API (`run_trace`, `Settings`, the Trace); the reference
numbers come from the model directly. Attention is stored packed (engine/schema/packed.py): each value
within 1/4095 of the true one and each running sum within 0.5/4095, so those are the tolerances;
the engine and the reference add in another order on top of that (ORDER, tests/numerics.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import Settings, run_trace
from tests import numerics

ATTENTION_PROMPT = "Xiao Ming went to the supermarket and bought some apples. Then he"
ATTENTION_STEPS = 8
SAMPLING = dict(temperature=0.7, top_k=20, top_p=0.9)
SAMPLING_PROMPTS = {"english": ("Once upon a time", 11), "chinese": ("小明去超市买了苹果，接着他", 5)}
EOS_PROMPT = "What colour is the sky? Answer in one word."   # the model answers and ends early


def context_ids(trace) -> list[int]:
    """The templated prompt and every generated token, as fed to the model."""
    return [t.id for t in trace.prompt.tokens] + [s.id for s in trace.steps]


def eager_attentions(engine, ids: list[int]) -> list[np.ndarray]:
    """One eager forward over `ids` with `output_attentions=True`: per layer [heads, q, k]. The
    model is shared, so the implementation is switched under the engine's lock and put back."""
    model = engine.model
    with engine.lock, torch.inference_mode():
        before = model.config._attn_implementation
        model.set_attn_implementation("eager")
        try:
            out = model(input_ids=torch.tensor([ids], device=engine.device), use_cache=False,
                        output_attentions=True)
        finally:
            model.set_attn_implementation(before)
        assert model.config._attn_implementation == before
    return [a[0].float().cpu().numpy() for a in out.attentions]


def assert_rows_match(captured: np.ndarray, reference: np.ndarray, what: str) -> None:
    """Rows (last axis) agree value by value and in their running sums, within the packing error."""
    assert captured.shape == reference.shape, (what, captured.shape, reference.shape)
    value_err = float(np.abs(captured - reference).max())
    sum_err = float(np.abs(np.cumsum(captured, -1) - np.cumsum(reference, -1)).max())
    assert value_err <= numerics.PACKED and sum_err <= numerics.PACKED_SUM, (what, value_err, sum_err)


def differs(captured: np.ndarray, other: np.ndarray) -> float:
    """How far `captured` is from a wrong reference (shorter rows padded with zeros)."""
    pad = captured.shape[-1] - other.shape[-1]
    other = np.pad(other, [(0, 0)] * (other.ndim - 1) + [(0, pad)])
    return float(np.abs(captured - other).max())


# --- attention ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def attention_run(engine):
    trace = run_trace(engine, ATTENTION_PROMPT, Settings(max_new_tokens=ATTENTION_STEPS, ignore_eos=True,
                                                         attention=True))
    # every query whose forward produced a step: the prompt, then each generated token but the last
    eager = eager_attentions(engine, context_ids(trace)[:-1])
    return trace, eager


def checked_layers(engine) -> list[int]:
    layers = engine.info.layers
    return sorted({0, 1, layers // 2, layers - 1})


def heads_in_each_group(engine) -> list[int]:
    """A head from every KV group (9 heads over 3 KV heads: 0, 4, 8), first and last included."""
    heads, groups = engine.info.heads, engine.info.kv_heads
    size = heads // groups
    picks = {g * size + min(g, size - 1) for g in range(groups)} | {0, heads - 1}
    return sorted(picks)


def test_the_run_is_what_the_comparison_assumes(engine, attention_run):
    trace, eager = attention_run
    n = len(trace.prompt.tokens)
    att = trace.attention
    assert att is not None and not att.prefill_capped and att.prefill_tokens == n
    assert len(att.prefill) == engine.info.layers == len(eager)
    assert len(trace.steps) == ATTENTION_STEPS == len(att.steps)
    assert eager[0].shape == (engine.info.heads, n + ATTENTION_STEPS - 1, n + ATTENTION_STEPS - 1)
    assert engine.info.kv_heads < engine.info.heads   # grouped-query heads: groups are checked below


@pytest.mark.numerics
def test_prefill_maps_equal_eager_attention(engine, attention_run):
    trace, eager = attention_run
    n = trace.attention.prefill_tokens
    heads = heads_in_each_group(engine)
    for layer in checked_layers(engine):
        captured = trace.attention.prefill[layer].unpack()          # [heads, n, n]
        assert captured.shape == (engine.info.heads, n, n)
        for h in heads:
            assert_rows_match(captured[h], eager[layer][h, :n, :n], f"prefill layer {layer} head {h}")
        # not vacuous: the maps of another layer, or of a head in another KV group, would fail
        other_layer = (layer + 1) % engine.info.layers
        assert differs(captured, eager[other_layer][:, :n, :n]) > 10 * numerics.PACKED, layer
        assert differs(captured[heads[0]], eager[layer][heads[-1], :n, :n]) > 10 * numerics.PACKED, layer


@pytest.mark.numerics
def test_decode_rows_equal_eager_attention_of_the_newest_query(engine, attention_run):
    trace, eager = attention_run
    n = len(trace.prompt.tokens)
    heads = heads_in_each_group(engine)
    for k, packed in enumerate(trace.attention.steps):
        rows = packed.unpack()                                       # [layers, heads, keys]
        q = n - 1 + k   # step 0: the last prompt position; step k: the k-th generated token
        assert rows.shape == (engine.info.layers, engine.info.heads, q + 1), (k, rows.shape)
        for layer in checked_layers(engine):
            for h in heads:
                assert_rows_match(rows[layer, h], eager[layer][h, q, :q + 1], f"step {k} layer {layer} head {h}")
            # not vacuous: the neighbouring query's row (one key shorter) would fail
            assert differs(rows[layer], eager[layer][:, q - 1, :q]) > 10 * numerics.PACKED, (k, layer)
        # and so would the same query's row in another layer
        assert differs(rows[0], eager[1][:, q, :q + 1]) > 10 * numerics.PACKED, k


def test_capture_leaves_the_attention_implementation_as_it_was(engine, attention_run):
    before = engine.model.config._attn_implementation
    run_trace(engine, "Hi", Settings(max_new_tokens=2, attention=True, logit_lens=True))
    assert engine.model.config._attn_implementation == before


# --- sampling -------------------------------------------------------------------------------------
def generate_step_probs(engine, ids: list[int], seed: int) -> torch.Tensor:
    """The distribution `model.generate` samples its next token from after `ids`: softmax of the
    processed scores (temperature, top-k, top-p applied by generate itself)."""
    torch.manual_seed(seed)
    with engine.lock:
        out = engine.model.generate(
            input_ids=torch.tensor([ids], device=engine.device),
            attention_mask=torch.ones((1, len(ids)), dtype=torch.long, device=engine.device),
            do_sample=True, max_new_tokens=1, output_scores=True, return_dict_in_generate=True,
            **SAMPLING)
    return torch.softmax(out.scores[0][0].float(), dim=-1)


@pytest.mark.numerics
@pytest.mark.parametrize("name", SAMPLING_PROMPTS)
def test_sampled_probabilities_equal_generate_processed_scores(engine, name):
    prompt, seed = SAMPLING_PROMPTS[name]
    trace = run_trace(engine, prompt, Settings(max_new_tokens=10, seed=seed, ignore_eos=True, **SAMPLING))
    ids = context_ids(trace)
    n = len(trace.prompt.tokens)
    filtered = uncertain = 0
    for k, step in enumerate(trace.steps):
        p = generate_step_probs(engine, ids[:n + k], seed)     # the context this step was chosen in
        assert numerics.close(step.chosen_p_final, float(p[step.id]), 1), (k, step.chosen_p_final, float(p[step.id]))
        for c in step.candidates:
            assert numerics.close(c.p_final, float(p[c.id]), 1), (k, c.id, c.p_final, float(p[c.id]))
        assert step.chosen_p_final > 0
        filtered += sum(c.p_final == 0 and c.p_model > 0 for c in step.candidates)
        uncertain += step.chosen_p_final < 0.99
    # not vacuous: some steps really sampled, and top-k/top-p really cut candidates off
    assert uncertain > 0 and filtered > 0, (uncertain, filtered)


# --- stopping -------------------------------------------------------------------------------------
def generation_config_eos(engine) -> set[int]:
    eos = engine.model.generation_config.eos_token_id
    return {int(e) for e in (eos if isinstance(eos, list) else [eos]) if e is not None}


def generate_greedy(engine, ids: list[int], max_new_tokens: int) -> list[int]:
    with engine.lock:
        out = engine.model.generate(
            input_ids=torch.tensor([ids], device=engine.device),
            attention_mask=torch.ones((1, len(ids)), dtype=torch.long, device=engine.device),
            do_sample=False, max_new_tokens=max_new_tokens)
    return out[0, len(ids):].tolist()


def test_eos_ids_are_the_generation_configs(engine):
    assert generation_config_eos(engine)
    assert set(engine.eos_ids) == generation_config_eos(engine)


@pytest.mark.numerics
@pytest.mark.parametrize("prompt, max_new_tokens, reason", [
    (EOS_PROMPT, 40, "eos"),
    (EOS_PROMPT, 6, "max_tokens"),
])
def test_greedy_run_stops_where_generate_stops(engine, prompt, max_new_tokens, reason):
    trace = run_trace(engine, prompt, Settings(max_new_tokens=max_new_tokens))
    ours = [s.id for s in trace.steps]
    theirs = generate_greedy(engine, [t.id for t in trace.prompt.tokens], max_new_tokens)
    assert trace.summary.stop_reason == reason
    gaps = numerics.margins(trace.steps)
    numerics.assert_same_greedy(ours, theirs, gaps)
    if reason == "eos":
        assert len(ours) < max_new_tokens and ours[-1] in generation_config_eos(engine)
        assert not any(t in generation_config_eos(engine) for t in ours[:-1])
    else:
        assert len(ours) == max_new_tokens and not set(ours) & generation_config_eos(engine)


@pytest.mark.numerics
def test_raw_captured_probabilities_equal_eager_within_order(engine):
    """Before packing: the probabilities our SDPA wrapper computes on the side equal eager's
    weights of the same positions within ORDER (tests/numerics.py), at prefill (the map and the last
    row) and at a decode step on the cache (the newest query's row), in every layer and head."""
    from transformers import DynamicCache
    from engine.model.hooks import Capture
    ids = [t.id for t in run_trace(engine, ATTENTION_PROMPT, Settings(max_new_tokens=1)).prompt.tokens]
    n = len(ids)
    cache = DynamicCache(config=engine.model.config)
    prefill = Capture(attention=True, map_tokens=n)
    token = int(engine.forward(torch.tensor([ids]), cache, prefill).logits.argmax())
    decode = Capture(attention=True)
    engine.forward(torch.tensor([[token]]), cache, decode)
    eager = eager_attentions(engine, ids + [token])
    assert prefill.calls == decode.calls == engine.info.layers
    for layer in range(engine.info.layers):
        for got, want in ((prefill.maps[layer], eager[layer][:, :n, :n]),
                          (prefill.rows[layer], eager[layer][:, n - 1, :n]),
                          (decode.rows[layer], eager[layer][:, n, :n + 1])):
            got = got.cpu().numpy()
            assert numerics.close(got, want, 1), (layer, numerics.worst(got, want))
    # not vacuous: the row before the newest differs by far more than the tolerance
    assert numerics.worst(decode.rows[3].cpu().numpy()[:, :n], eager[3][:, n - 1, :n]) > 100 * numerics.ORDER
