"""Issue 48 item 10: the page's technical line about the model said the loader's own names in either
language ("gguf-q4_1 (dequantized)", "cpu"); a loaded file was named by the engine's id
("embedded:SmolLM2-135M-Instruct"). They are said in words."""

import json

import pytest

from engine.schema.specs import ModelInfo
from tests.paths import FIXTURES
from ui.page.header import model_line


def info() -> ModelInfo:
    plain = json.loads((FIXTURES / "trace_en_sampled.json").read_text(encoding="utf-8"))["model"]
    return ModelInfo(**plain)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_model_line_says_the_loaders_names_in_words(lang):
    line = model_line(info(), lang)
    assert "dequantized" not in line and "gguf-q4_1" not in line, line
    assert "**cpu**" not in line and "CPU" in line, line
    assert "Q4_1" in line and "`float32`" in line and "`sdpa`" in line, line
