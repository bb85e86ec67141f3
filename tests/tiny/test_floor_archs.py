"""The serving floor on every tiny architecture (engine/floor): continuous batching serves the workload
with each request's tokens equal to its own `generate`, or, where transformers' paged cache cannot run
the model's attention (GPT-NeoX), a keyed refusal said in the page's language, before anything is timed."""

import re

import pytest

from engine.errors import EngineError
from engine.floor import fit
from engine.floor.serve import run_floor
from tests.tiny.models import ARCHS

TINY = dict(requests=2, arrival="burst", prompt_tokens=32, shared_prefix=8, new_tokens=3, page_size=8,
            num_blocks=32, max_batch_tokens=32)
# GPT-NeoX's attention calls the cache as update(key, value, layer): no paged cache; Gemma 2 runs eager only
REFUSED = {"gpt_neox", "gemma2"}


@pytest.mark.numerics
@pytest.mark.parametrize("arch", ARCHS)
def test_the_floor_serves_or_says_it_cannot(arch, tiny_engine):
    engine = tiny_engine(arch)
    if arch in REFUSED:
        with pytest.raises(EngineError) as refused:
            run_floor(engine, **TINY)
        assert refused.value.key == "floor_unsupported"
        return
    data = run_floor(engine, **TINY)
    assert [lane["same_as_generate"] for lane in data["lanes"]] == [True, True]
    assert all(1 <= len(lane["tokens"]) <= 3 for lane in data["lanes"])


def test_the_refusal_is_in_the_page_language(tiny_engine):
    from ui.host.errors import message
    engine = tiny_engine("gpt_neox")
    with pytest.raises(EngineError) as refused:
        fit.require(engine)
    zh, en = message(refused.value, "zh"), message(refused.value, "en")
    assert "GPTNeoXForCausalLM" in zh and "服务现场" in zh
    assert not re.search(r"update\(|Traceback|PagedAttentionCache|paged", zh), zh
    assert "continuous batching" in en and "update(" not in en


def test_a_model_it_serves_passes_the_check(tiny_engine):
    fit.require(tiny_engine("llama"))             # no exception: the probe request was served
    assert fit._KNOWN[tiny_engine("llama").info.id] is None
