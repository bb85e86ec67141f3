"""The compiled decode step (engine/compiled) on every tiny architecture: either it fits, or the engine
says why it is not for this model (engine/compiled/fit.py), keyed, in both languages, and stays eager
without trying a build that cannot be right."""

import pytest

from engine.compiled.fit import refusal
from tests.tiny.models import ARCHS

NOT_FOR = {"qwen3_moe": "compiled_experts", "mistral": "compiled_sliding", "gemma3_text": "compiled_sliding",
           "gemma2": "compiled_not_ours"}       # Gemma 2 runs eager attention: watched by hooks, not our function


@pytest.mark.parametrize("arch", ARCHS)
def test_the_compiled_step_fits_or_says_why_not(arch, tiny_engine):
    engine = tiny_engine(arch)
    found = refusal(engine)
    assert (found.key if found else None) == NOT_FOR.get(arch), arch


@pytest.mark.parametrize("arch", sorted(NOT_FOR))
def test_a_model_it_is_not_for_stays_eager_and_says_so(arch, tiny_engine):
    from ui.host.errors import message
    engine = tiny_engine(arch)
    assert engine.start_fast(wait=True) is None and engine.fast is None
    assert engine.fast_refusal.key == NOT_FOR[arch]
    zh = message(engine.fast_refusal, "zh")
    assert "编译" in zh and type(engine.model).__name__ in zh
    assert "not for" in message(engine.fast_refusal, "en")


@pytest.mark.parametrize("device_map, key", [({"": 0}, None), ({"model": "cuda:0", "lm_head": "cuda:0"}, None),
                                            ({"model.layers.0": 0, "model.layers.1": 1}, "compiled_devices")])
def test_a_model_on_one_device_is_not_refused_for_its_device_map(device_map, key, tiny_engine, monkeypatch):
    """device_map="auto" leaves hf_device_map {"": 0} on a one-GPU host: every hub model a GPU host names
    was refused as "spread over several devices" for it."""
    engine = tiny_engine("llama")
    monkeypatch.setattr(engine.model, "hf_device_map", device_map, raising=False)
    found = refusal(engine)
    assert (found.key if found else None) == key


@pytest.mark.parametrize("arch", [a for a in ARCHS if a not in NOT_FOR])
def test_the_graph_path_builds_and_matches_eager_on_every_architecture_it_fits(arch, tiny_engine, monkeypatch):
    """The GPU's graph path (engine/compiled/graph.py; dynamo's aot_eager here, tests/tiny/test_graph.py
    says why) on each architecture the step fits: one graph, checked teacher-forced against eager. The
    graphs of all of them share one code object: at dynamo's default limit of 8 the ninth failed."""
    from engine.compiled.fast import FastPath
    monkeypatch.setenv("TBT_FAST_KIND", "graph")
    monkeypatch.setenv("TBT_GRAPH_BACKEND", "aot_eager")
    engine = tiny_engine(arch)
    fast = FastPath(engine.model, engine.device, engine.info.id)
    assert fast.compile_now("watch", 256) == "ready", fast.describe()
    built = fast.describe()["step@256"]
    assert built["same_tokens"] and built["max_logit_diff"] <= built["logit_tol"], built
