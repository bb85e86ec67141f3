"""Bad requests and bad models fail fast with the engine's own typed errors."""

import math

import pytest

from engine import Engine, InvalidRequest, Limits, ModelLoadError, Settings, stream_trace
from engine.model.loading import resolve_source
from tests.paths import FIXTURES



@pytest.mark.parametrize("prompt, message", [
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("x" * 20_001, "limit is 20,000"),
    (None, "must be text"),
])
def test_bad_prompts(engine, prompt, message):
    with pytest.raises(InvalidRequest, match=message):
        stream_trace(engine, prompt, Settings())


@pytest.mark.parametrize("field, value", [
    ("max_new_tokens", 0), ("max_new_tokens", 10**6), ("max_new_tokens", 2.5),
    ("temperature", -0.1), ("temperature", math.nan), ("temperature", math.inf),
    ("top_p", 0.0), ("top_p", 1.5), ("top_p", math.nan),
    ("top_k", -1), ("seed", -5), ("top_candidates", 0),
    ("mode", "dreaming"), ("use_cache", "yes"), ("stop", [""]),
])
def test_bad_settings(engine, field, value):
    with pytest.raises(InvalidRequest, match=field):
        stream_trace(engine, "Hello", Settings(**{field: value}))


def test_prompt_longer_than_the_context(engine, monkeypatch):
    monkeypatch.setattr(engine, "limits", Limits(max_prompt_tokens=50))
    with pytest.raises(InvalidRequest, match="limit is 50"):
        stream_trace(engine, "word " * 100, Settings())
    monkeypatch.setattr(engine, "limits", Limits(max_prompt_chars=10**6, max_prompt_tokens=10**5))
    with pytest.raises(InvalidRequest, match="context of 8,192"):
        stream_trace(engine, "word " * 9000, Settings())
    with pytest.raises(InvalidRequest, match="attention capture works on prompts up to 2,048"):
        stream_trace(engine, "word " * 3000, Settings(attention=True))


def test_errors_come_before_model_work(engine, monkeypatch):
    def no_forward(*_a, **_k):
        raise AssertionError("the model ran")
    monkeypatch.setattr(engine, "forward", no_forward)
    with pytest.raises(InvalidRequest):
        stream_trace(engine, "", Settings())
    with pytest.raises(InvalidRequest):
        stream_trace(engine, "ok", Settings(temperature=-1))


def test_missing_path_and_unknown_ids():
    with pytest.raises(ModelLoadError, match="no model folder"):
        resolve_source("/no/such/folder")
    with pytest.raises(ModelLoadError, match="no model folder"):
        resolve_source("./relative/missing")
    with pytest.raises(ModelLoadError, match="not a hub id"):
        resolve_source("not a model id!")


def test_unknown_hub_id_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="cannot load"):
        Engine.load("no-such-org/no-such-model-xyz")


def test_model_needing_remote_code_is_refused():
    with pytest.raises(ModelLoadError, match="remote code"):
        Engine.load(str(FIXTURES / "remote_code_model"))


def test_host_sets_the_caps_through_the_environment(monkeypatch):
    monkeypatch.setenv("TBT_MAX_PROMPT_CHARS", "500")
    monkeypatch.setenv("TBT_MAX_UPLOAD_MB", "5")
    monkeypatch.setenv("TBT_LAB_MAX_TOKENS", "512")
    monkeypatch.setenv("TBT_MAX_NEW_TOKENS", "not a number")      # ignored: the default stays
    limits = Limits.from_env()
    assert limits.max_prompt_chars == 500 and limits.max_upload_bytes == 5_000_000
    assert limits.lab_max_prompt_tokens == 512 and limits.max_new_tokens == Limits.max_new_tokens
