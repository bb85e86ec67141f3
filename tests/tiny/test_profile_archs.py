"""The profile of a decode step on every tiny architecture (engine/profile): the op table is the one the
model's own modules imply (fused q/k/v and gate/up, GPT-2's Conv1D, GELU MLPs, a mixture's router and
experts, Gemma's and OLMo 2's extra norms), every op is timed and predicted, the ops add up to the
hooked pass, and a sliding-window layer's attention counts only the keys it reads."""

from dataclasses import replace

import pytest

from engine import Settings, run_trace
from engine.matrix.tiny import WINDOW
from engine.profile.ops import Dims, Layer, layer_costs
from engine.profile.plan import layer_plans
from engine.profile.run import profile_trace
from tests.tiny.models import ARCHS, SLIDING_ARCHS

PROMPT = "The sky is blue because the light of the sun is scattered by the air."   # past the window of 8
# ops each architecture's layers must show (beyond the norms, attention and residual all have)
EXPECT = {"phi3": {"qkv_proj", "gate_up_proj", "act_mul"}, "gpt2": {"qkv_proj", "up_proj", "act"},
          "gpt_neox": {"qkv_proj", "up_proj", "act"}, "qwen3_moe": {"router", "experts", "qk_norm"},
          "gemma3_text": {"ffn_norm", "post_ffn_norm", "qk_norm"}, "gemma2": {"ffn_norm", "post_ffn_norm"},
          "olmo2": {"qk_norm", "post_ffn_norm"}}
LLAMA_LIKE = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "act_mul"}


@pytest.fixture(scope="module")
def profiles(tiny_engine):
    done = {}

    def of(arch):
        if arch not in done:
            engine = tiny_engine(arch)
            settings = replace(Settings(max_new_tokens=3, attention=True, logit_lens=True), ignore_eos=True)
            trace = run_trace(engine, PROMPT, settings)
            done[arch] = engine, trace, profile_trace(engine, trace, step=2, repeats=1)
        return done[arch]
    return of


@pytest.mark.parametrize("arch", ARCHS)
def test_the_profile_of_every_architecture_adds_up(arch, profiles):
    engine, trace, profile = profiles(arch)
    layers = engine.info.layers
    for name, p in profile["phases"].items():
        ops = {r["op"] for r in p["rows"] if r["layer"] is not None}
        assert EXPECT.get(arch, LLAMA_LIKE) <= ops, (name, ops)
        assert {"attention", "residual"} <= ops
        assert all(r["measured_ms"] is not None for r in p["rows"]), name
        assert all(r["predicted_ms"] and r["predicted_ms"] > 0 for r in p["rows"] if r["op"] not in
                   ("other", "watching")), name
        assert sum(1 for r in p["rows"] if r["op"] == "attention") == layers
        # the per-op times add up to the hooked pass they were measured in
        assert p["ops_sum_ms"] == pytest.approx(p["hooked_ms"], rel=1e-6), name
    assert profile["phases"]["decode"]["keys"] == len(trace.prompt.tokens) + 2


@pytest.mark.parametrize("arch", ["gpt2", "phi3", "qwen3_moe"])
def test_the_matmuls_are_the_modules_own_weights(arch, tiny_engine):
    # every matmul op reads exactly its module's weights: the plan's shapes are the parameters (no config guess)
    model = tiny_engine(arch).model
    for plan in layer_plans(model):
        for op, n_in, n_out in plan.layer.matmuls:
            weights = sum(m.weight.numel() for m in plan.ops[op])
            assert n_in * n_out == weights, op
        if plan.layer.experts:
            n, k, one = plan.layer.experts
            assert (n, k) == (4, 2) and one * n == sum(p.numel() for p in plan.ops["experts"][0].parameters())


def test_the_experts_count_at_the_routed_share(tiny_engine):
    model = tiny_engine("qwen3_moe").model
    layer = layer_plans(model)[0].layer
    d = Dims.of_config(model.config)
    n, k, one = layer.experts
    step = layer_costs(d, 1, 10, 4, layer)["experts"]
    assert step[1] < 4 * (k * one) * 1.2 and step[1] > 4 * k * one        # k of E experts' weights read
    many = layer_costs(d, 64, 64, 4, layer)["experts"]
    assert many[1] > 4 * (n * one) * 0.99                                    # 64 tokens reach every expert


@pytest.mark.parametrize("arch", SLIDING_ARCHS)
def test_a_sliding_layer_reads_only_its_window(arch, profiles):
    engine, trace, profile = profiles(arch)
    types = getattr(engine.model.config.get_text_config(), "layer_types", None) or ["sliding_attention"] * 3
    plans = layer_plans(engine.model)
    decode = profile["phases"]["decode"]
    attention = {r["layer"]: r for r in decode["rows"] if r["op"] == "attention"}
    assert decode["keys"] > WINDOW
    for i, (kind, plan) in enumerate(zip(types, plans)):
        assert plan.layer.window == (WINDOW if "sliding" in kind else None), i
    d = Dims.of_config(engine.model.config)
    full = layer_costs(d, 1, decode["keys"], 4, Layer.llama(d))["attention"][0]
    for i, kind in enumerate(types):
        if "sliding" in kind:
            assert attention[i]["flops"] < full, i


@pytest.mark.parametrize("arch", ["llama", "gpt2", "gemma2"])
def test_the_attention_op_is_named_for_what_this_model_does(arch, profiles):
    """Issue 39: "attention (RoPE, SDPA)" was every model's label; GPT-2 has learned positions (no RoPE),
    Gemma 2 soft-caps its scores. The name comes from the model: its modules, its config, its kernel."""
    from viz.charts.profile import attention_name, groups_frame, list_sep, ops_frame
    from viz.text.labels import label
    engine, _, profile = profiles(arch)
    kind = profile["attention"]
    assert kind["positions"] == {"llama": "rope", "gpt2": "learned", "gemma2": "rope"}[arch]
    from engine.model.attention import FAST_NAME, NAME
    loaded = engine.info.attn_implementation            # the engine's own SDPA (capture beside it) is SDPA
    assert kind["impl"] == ("sdpa" if loaded in (NAME, FAST_NAME) else loaded)
    assert bool(kind["softcap"]) == (arch == "gemma2")
    for lang in ("en", "zh"):
        name = attention_name(profile, lang)
        assert name in set(ops_frame(profile, "decode", lang)["op"]) and name in set(groups_frame(profile, lang)["group"])
        impl = label("prof_attn_eager", lang) if kind["impl"] == "eager" else "SDPA" if kind["impl"] == "sdpa" else kind["impl"]
        parts = [label("prof_attn_learned" if arch == "gpt2" else "prof_attn_rope", lang), impl]
        parts += [label("prof_attn_softcap", lang)] if arch == "gemma2" else []
        assert name == label("prof_op_attention", lang, how=list_sep(lang).join(parts)), name
    assert "RoPE" not in attention_name({**profile, "attention": None}, "en")     # a profile that did not record it


@pytest.mark.parametrize("arch", ["llama", "gpt2", "gemma2"])
def test_the_activation_is_named_for_this_model(arch, profiles):
    """SiLU was every model's MLP activation in the profile's names; GPT-2 and Gemma 2 use GELU."""
    from viz.charts.profile import group_name, ops_frame
    _, _, profile = profiles(arch)
    act = {"llama": "SiLU", "gpt2": "GELU", "gemma2": "GELU"}[arch]
    for lang in ("en", "zh"):
        group = group_name("elementwise", profile, lang)
        assert group.startswith(act) and ("SiLU" in group) == (act == "SiLU"), group
        ops = set(ops_frame(profile, "decode", lang)["op"])
        assert not any("SiLU" in op for op in ops) or act == "SiLU", ops
    assert group_name("elementwise", {**profile, "activation": None}, "en").startswith("activation")
