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
