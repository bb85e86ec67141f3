"""A host points TBT_MODELS at tiny models' folders: the app serves them, and `/trace` on each (the
`model` argument) gives the tokens and attention the engine gives in this process."""

import os

import pytest

from engine import Settings, Trace, run_trace
from tests.servers import app_server

MODELS = ("gemma2", "gpt_neox")        # eager fallback; another module tree and final norm
ARGS = dict(max_new_tokens=6, temperature=0.0, top_k=0, top_p=1.0, seed=0, attention=True, logit_lens=True,
            chat_template=True)


@pytest.fixture(scope="module")
def tiny_app(tiny_model):
    paths = [str(tiny_model(arch)) for arch in MODELS]
    env = {**os.environ, "TBT_MODELS": ",".join(paths), "TBT_COMPILE": "0"}
    with app_server("tiny-app", env) as (_proc, url):
        from gradio_client import Client
        yield Client(url, verbose=False, httpx_kwargs={"timeout": 60}), paths


@pytest.mark.slow
@pytest.mark.parametrize("arch", MODELS)
def test_trace_through_the_app_on_a_tiny_model(arch, tiny_app, tiny_engine, tiny_model):
    client, _paths = tiny_app
    path = client.predict(prompt="Hello there!", model=str(tiny_model(arch)), **ARGS, api_name="/trace")
    with open(path, encoding="utf-8") as f:
        got = Trace.from_json(f.read())
    mine = run_trace(tiny_engine(arch), "Hello there!", Settings(max_new_tokens=6, attention=True, logit_lens=True))
    assert got.model.id == str(tiny_model(arch)) and got.model.source == "local"
    assert [s.id for s in got.steps] == [s.id for s in mine.steps]
    assert got.attention is not None and len(got.attention.steps) == len(got.steps)
    assert all(s.lens is not None for s in got.steps)
    assert (got.model.attn_requested == "sdpa") == (arch == "gemma2")
