"""The graph path of the compiled step (engine/compiled/graph.py: a GPU's kind) on the embedded model, on
the CPU: its 30 layers' step is one graph (fullgraph), compiled once for every run after it, and its
watched runs' tokens, cache curve, attention rows and lens are the eager path's (fp32).

dynamo's backend is "aot_eager" (tests/tiny/test_graph.py says why); `make gpu-check` compiles it with
Inductor and CUDA graphs on a GPU."""

from __future__ import annotations

import dataclasses

import pytest
from torch._dynamo.utils import counters

from engine import Settings, run_trace
from engine.compiled.fast import GRAPH_BUCKETS, FastPath
from tests.tiny.test_fast import WATCHED, assert_watched_alike, eager

BUCKET = GRAPH_BUCKETS[0]


@pytest.fixture(scope="module")
def graphed(engine):
    mp = pytest.MonkeyPatch()
    mp.setenv("TBT_FAST_KIND", "graph")
    mp.setenv("TBT_GRAPH_BACKEND", "aot_eager")
    kept, engine.fast = engine.fast, None
    try:
        fast = FastPath(engine.model, engine.device, engine.info.id)
        before = counters["stats"]["unique_graphs"]
        assert fast.compile_now("watch", BUCKET) == "ready", fast.describe()
        assert counters["stats"]["unique_graphs"] == before + 1          # one graph: no break in 30 layers
        engine.fast = fast
        yield fast
    finally:
        engine.fast = kept
        mp.undo()


@pytest.mark.numerics
def test_the_embedded_model_s_watched_graph_runs_are_its_eager_runs(engine, graphed):
    prompt = "什么是量子计算？"
    built = graphed.describe()[f"step@{BUCKET}"]
    assert built["same_tokens"] and built["max_logit_diff"] <= built["logit_tol"], built
    graphs, recompiles = counters["stats"]["unique_graphs"], dict(counters["recompiles"])
    watched = dataclasses.replace(WATCHED, max_new_tokens=12)
    graph = run_trace(engine, prompt, watched)
    assert_watched_alike(engine, graph, eager(engine, prompt, watched), BUCKET)
    plain = run_trace(engine, prompt, Settings(max_new_tokens=8, ignore_eos=True))
    assert plain.observation.decode == "compiled"
    assert counters["stats"]["unique_graphs"] == graphs and dict(counters["recompiles"]) == recompiles
