"""The tiny tier's fixtures: tiny models (random weights, the embedded tokenizer) built per session."""

import pytest

from tests.tiny.models import TinyEngines, TinyModels


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """tiny_model(arch, template="scaffold") -> the folder of a tiny model, built once per session."""
    return TinyModels(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def tiny_engine(tiny_model):
    """tiny_engine(arch, template="scaffold") -> an Engine on that tiny model (CPU, float32), loaded once."""
    return TinyEngines(tiny_model)
