"""A host points TBT_MODELS at tiny models' folders: the app's models table offers them, and the
`/trace` endpoint's function (ui/api/trace.py) on each (its `model` argument) gives the tokens and
attention the engine gives in this process.

In-process, without a server: the tiny tier starts none (tests/conftest.py). /trace over HTTP, through
gradio_client, is tests/app/test_app_api.py's, on the session's app."""

import pytest

from engine import Settings, Trace, run_trace

# two models loaded and traced (~14 s on a busy 2-core box): make test runs it, make quick (near its
# 3 minutes) does not, as before
pytestmark = pytest.mark.slow
MODELS = ("gemma2", "gpt_neox")        # eager fallback; another module tree and final norm
ARGS = dict(max_new_tokens=6, temperature=0.0, top_k=0, top_p=1.0, seed=0, attention=True, logit_lens=True,
            chat_template=True)


@pytest.fixture(scope="module")
def trace_endpoint(tiny_model):
    """The app's /trace function over a models table read from TBT_MODELS, as `python app.py` builds it
    (the first model is loaded at once, the other on its first call)."""
    from ui.api.trace import TraceEndpoint
    from ui.host.models import Models, allowed_from_env
    from ui.host.runs import TraceFiles
    mp = pytest.MonkeyPatch()
    mp.setenv("TBT_MODELS", ",".join(str(tiny_model(arch)) for arch in MODELS))
    mp.setenv("TBT_COMPILE", "0")
    try:
        models = Models(allowed_from_env())
    finally:
        mp.undo()
    return models, TraceEndpoint(models, TraceFiles())


def call_trace(endpoint, prompt: str, **kwargs) -> Trace:
    """Iterate the endpoint's generator as Gradio does: None after each step, the file last."""
    *steps, file = list(endpoint.trace(prompt, **kwargs))
    assert steps and all(s is None for s in steps)
    with open(file["path"], encoding="utf-8") as f:
        return Trace.from_json(f.read())


@pytest.mark.parametrize("arch", MODELS)
def test_trace_through_the_app_on_a_tiny_model(arch, trace_endpoint, tiny_engine, tiny_model):
    models, endpoint = trace_endpoint
    assert models.allowed == [str(tiny_model(a)) for a in MODELS] and models.default == str(tiny_model(MODELS[0]))
    got = call_trace(endpoint, "Hello there!", model=str(tiny_model(arch)), **ARGS)
    mine = run_trace(tiny_engine(arch), "Hello there!", Settings(max_new_tokens=6, attention=True, logit_lens=True))
    assert got.model.id == str(tiny_model(arch)) and got.model.source == "local"
    assert [s.id for s in got.steps] == [s.id for s in mine.steps]
    assert got.attention is not None and len(got.attention.steps) == len(got.steps)
    assert all(s.lens is not None for s in got.steps)
    assert (got.model.attn_requested == "sdpa") == (arch == "gemma2")


def test_a_model_the_host_does_not_offer_is_refused(trace_endpoint):
    _, endpoint = trace_endpoint
    with pytest.raises(Exception, match="not offered|offer"):
        call_trace(endpoint, "Hello there!", model="no-such-org/no-such-model", **ARGS)
