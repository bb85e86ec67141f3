"""The tiny models build from their configs and load through the engine's own loader (a local folder)."""

import json

import pytest

from engine.matrix.tiny import HIDDEN, LAYERS
from tests.tiny.models import ARCHS, TEMPLATES


@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_model_builds_and_loads(arch, tiny_engine, tiny_model):
    engine = tiny_engine(arch)
    info = engine.info
    assert info.source == "local" and info.id == str(tiny_model(arch))
    assert (info.hidden_size, info.layers) == (HIDDEN, LAYERS)
    assert info.vocab_size == len(engine.tokenizer)
    assert json.loads((tiny_model(arch) / "SOURCE").read_text())["tiny"] == arch


@pytest.mark.parametrize("template", TEMPLATES)
def test_each_template_is_saved_with_the_model(template, tiny_model):
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(tiny_model("llama", template))
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                         tokenize=False)
    assert ("<think>" in text) == (template == "tags")


@pytest.mark.parametrize("arch", ARCHS)
def test_special_ids_are_the_tokenizers(arch, tiny_model):
    """A config's own defaults (OLMo 2: pad 1, which is <|im_start|> here) would make `model.generate`
    mask those prompt tokens as padding, and every reference token differ."""
    from transformers import AutoConfig, AutoTokenizer
    path = tiny_model(arch)
    config, tokenizer = AutoConfig.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    assert (config.bos_token_id, config.eos_token_id, config.pad_token_id) == (
        tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id)
