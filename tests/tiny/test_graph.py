"""The graph path of the compiled decode step (engine/compiled/graph.py: the GPU's kind, torch.compile over
one persistent static cache per bucket) on the tiny llama, on the CPU: the step compiles as one graph
(fullgraph: a host read inside it fails the build), once per bucket for every run after it, and its
runs' tokens, attention rows and lens are the eager path's.

dynamo's backend here is "aot_eager" (TBT_GRAPH_BACKEND): the same graph dynamo traces for Inductor
(its breaks, guards and recompiles are dynamo's), without Inductor's C++ compile, which took ~25 s for
this model on two cores; on a GPU the backend is Inductor with CUDA graphs (scripts/gpu_check.py)."""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch
from torch._dynamo.utils import counters

from engine import Settings, run_trace, stream_trace
from engine.compiled import graph as graph_module
from engine.compiled.fast import GRAPH_BUCKETS
from engine.run.prefixes import cache_key
from tests.tiny.test_fast import WATCHED, assert_forks_as_generate, assert_watched_alike, eager

BUCKET = GRAPH_BUCKETS[0]


@pytest.fixture(scope="module")
def llama(tiny_engine):
    return tiny_engine("llama")


def graphs() -> int:
    return counters["stats"]["unique_graphs"]


@pytest.fixture(scope="module")
def built(llama):
    """The tiny engine with the graph path on (eager again when the module ends): (its FastPath, the
    graphs dynamo compiled for it)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TBT_FAST_KIND", "graph")
    mp.setenv("TBT_GRAPH_BACKEND", "aot_eager")
    kept, llama.fast = llama.fast, None
    before = graphs()
    try:
        fast = llama.start_fast(wait=True)
        yield fast, graphs() - before
    finally:
        llama.fast = kept
        mp.undo()


def test_each_bucket_is_one_graph_checked_against_eager(llama, built):
    fast, compiled = built
    buckets = fast.buckets_for(llama.info.context_length)
    assert fast.kind == "graph" and buckets[0] == BUCKET
    assert compiled == len(buckets), (compiled, buckets)          # fullgraph: one graph per bucket, no break
    for b in buckets:
        step = fast.describe()[f"step@{b}"]
        assert step["state"] == "ready" and step["kind"] == "graph" and step["backend"] == "aot_eager", step
        assert step["same_tokens"] and step["top1_agree"] == 1.0 and step["max_logit_diff"] <= step["logit_tol"], step
        assert step["compile_s"] > 0 and step["check_steps"] > 0


def test_runs_of_any_length_and_the_next_run_use_the_graph_compiled_once(llama, built):
    before, recompiles = graphs(), dict(counters["recompiles"])
    plain = Settings(max_new_tokens=12, ignore_eos=True)
    for prompt, settings in [("Hello, world!", plain), ("A much longer prompt " * 20, plain),
                             ("Hi", dataclasses.replace(WATCHED, max_new_tokens=6))]:
        trace = run_trace(llama, prompt, settings)
        assert (trace.observation.decode, trace.observation.static_cache_tokens) == ("compiled", BUCKET)
    assert graphs() == before and dict(counters["recompiles"]) == recompiles


@pytest.mark.numerics
def test_a_watched_graph_run_captures_what_the_eager_path_captures(llama, built):
    prompt = "什么是量子计算？"
    assert_watched_alike(llama, run_trace(llama, prompt, WATCHED), eager(llama, prompt, WATCHED), BUCKET)


@pytest.mark.numerics
def test_a_sampled_graph_run_is_the_eager_run(llama, built):
    sampled = Settings(max_new_tokens=20, temperature=0.9, top_k=40, top_p=0.95, seed=7, ignore_eos=True)
    graph, reference = run_trace(llama, "Tell me a story.", sampled), eager(llama, "Tell me a story.", sampled)
    assert graph.observation.decode == "compiled"
    assert [s.id for s in graph.steps] == [s.id for s in reference.steps]


def test_one_run_at_a_time_holds_the_graph_s_cache(llama, built):
    """The cache is one per bucket: a run started while another decodes on it decodes eagerly, and
    the first run's steps are untouched by it."""
    first = stream_trace(llama, "Count to ten.", Settings(max_new_tokens=8, ignore_eos=True))
    for event in first:
        if event.kind == "step":
            break
    second = run_trace(llama, "Name a colour.", Settings(max_new_tokens=4, ignore_eos=True))
    rest = list(first)
    assert event.trace.observation.decode == "compiled" and second.observation.decode == "eager"
    assert len(event.trace.steps) == 8 and rest
    alone = run_trace(llama, "Count to ten.", Settings(max_new_tokens=8, ignore_eos=True))
    assert [s.id for s in alone.steps] == [s.id for s in event.trace.steps]
    assert run_trace(llama, "Name a colour.", Settings(max_new_tokens=4, ignore_eos=True)).observation.decode == "compiled"


def test_the_app_s_way_compiles_in_the_background_while_runs_decode_eagerly(llama, built):
    """Engine.start_fast without wait: the build is queued and runs decode eagerly from that moment
    (the graph thread would hold their steps behind the compile) until the graph is checked and ready;
    /status's figures say what the build measured. Here the runner is the CPU's main thread: it serves
    the build as the app's does after launch."""
    from engine.compiled.fast import FastPath
    from engine.compiled.main_thread import MAIN
    from tests.waits import wait_until
    app_s = FastPath(llama.model, llama.device, llama.info.id)
    kept, llama.fast, stop = llama.fast, app_s, threading.Event()
    try:
        app_s.build_in_background(BUCKET)
        assert app_s.state("plain", BUCKET) in ("queued", "building") and app_s.compiling
        assert run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True)).observation.decode == "eager"
        def until_built():
            try:
                wait_until(lambda: app_s.state("plain", BUCKET) not in ("queued", "building"), 120, "the build")
            finally:
                stop.set()
        threading.Thread(target=until_built, daemon=True).start()
        MAIN.serve(stop)
        assert app_s.state("plain", BUCKET) == "ready" and app_s.compiling == 0, app_s.describe()
        assert app_s.describe()[f"step@{BUCKET}"]["same_tokens"] is True     # (its compile_s: ~0, dynamo's graph
        # for this bucket's shapes was compiled by the module's first path and serves this one's cache too)
        assert run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True)).observation.decode == "compiled"
    finally:
        stop.set()
        llama.fast = kept


@pytest.mark.numerics
def test_a_graph_run_forks_from_its_kept_cache_after_another_run_reused_the_graph(llama, built):
    """A finished run's cache is kept as a copy (to_dynamic): the next run rewriting the graph's one
    cache does not reach the branch, which continues as `generate` does from the same tokens."""
    run = run_trace(llama, "Name three colours.", Settings(max_new_tokens=10, ignore_eos=True), keep_cache=True)
    assert run.observation.decode == "compiled"
    run_trace(llama, "Something else entirely.", Settings(max_new_tokens=10, ignore_eos=True))  # rewrites the slot
    kept = llama.prefixes.get(cache_key(run))
    assert kept.get_seq_length() == len(run.prompt.tokens) + len(run.steps) - 1   # the last token was not fed
    assert_forks_as_generate(llama, run)


def one_bucket(llama):
    """A graph path of the first bucket alone, built in this process (Engine.start_fast builds them all)."""
    from engine.compiled.fast import FastPath
    fast = FastPath(llama.model, llama.device, llama.info.id)
    fast.compile_now("watch", BUCKET)
    return fast


def test_a_host_read_inside_the_step_fails_its_build_and_the_engine_stays_eager(llama, monkeypatch):
    """fullgraph=True: a `.tolist()` in the step (a host read: a GPU sync) breaks the graph, and the build
    says so instead of compiling half a graph; runs decode eagerly."""
    real = graph_module.watched_step

    def reads(model, ids, pos, cache):
        logits, rows, hidden = real(model, ids, pos, cache)
        return logits * (1.0 if logits.max().tolist() > -1e9 else 0.0), rows, hidden
    monkeypatch.setenv("TBT_FAST_KIND", "graph")
    monkeypatch.setenv("TBT_GRAPH_BACKEND", "aot_eager")
    monkeypatch.setattr(graph_module, "watched_step", reads)
    kept, llama.fast = llama.fast, None
    try:
        fast = llama.fast = one_bucket(llama)
        state = fast.state("plain", BUCKET)
        assert state.startswith("failed: "), state      # what dynamo said: the data-dependent read
        assert run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True)).observation.decode == "eager"
    finally:
        llama.fast = kept


def test_a_graph_whose_check_fails_says_what_differed_and_the_engine_stays_eager(llama, monkeypatch):
    monkeypatch.setenv("TBT_FAST_KIND", "graph")
    monkeypatch.setenv("TBT_GRAPH_BACKEND", "aot_eager")
    monkeypatch.setattr(graph_module, "LOGIT_TOL", {k: -1.0 for k in graph_module.LOGIT_TOL})
    kept, llama.fast = llama.fast, None
    try:
        fast = llama.fast = one_bucket(llama)
        state = fast.state("plain", BUCKET)
        assert state.startswith("not used: its logits differ from eager's by"), state
        assert fast.describe()[f"step@{BUCKET}"]["same_tokens"] is False
        assert run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True)).observation.decode == "eager"
    finally:
        llama.fast = kept


def test_the_gpu_s_graphs_run_on_one_thread_of_their_own():
    """CUDA graphs are replayed on the thread that recorded them: the GPU's steps all go to GRAPH's thread,
    whichever visitor's thread asks (here without a GPU: the hop itself)."""
    from engine.compiled.main_thread import GRAPH
    seen = []

    def ask():
        seen.append(GRAPH.run(lambda: threading.current_thread().name))
    askers = [threading.Thread(target=ask) for _ in range(3)] + [threading.current_thread()]
    for t in askers[:3]:
        t.start()
    ask()
    for t in askers[:3]:
        t.join(10)
    assert seen == ["tbt-graph"] * 4
    assert GRAPH.run(lambda: GRAPH.run(lambda: 7)) == 7          # a job that asks again runs in place


READS = {"__int__", "__float__", "__bool__", "__index__", "item", "tolist", "numpy", "__array__"}


class CountReads(torch.overrides.TorchFunctionMode):
    """Every read of a tensor's value to the host (on a GPU, each one waits for the device)."""

    def __init__(self):
        super().__init__()
        self.reads: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in READS:
            self.reads.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("settings", [WATCHED, Settings(max_new_tokens=24, ignore_eos=True),
                                      Settings(max_new_tokens=24, temperature=0.8, top_p=0.9, seed=3, ignore_eos=True)],
                         ids=["watched", "plain", "sampled"])
def test_a_compiled_decode_step_reads_the_device_once(llama, built, settings, monkeypatch):
    """The step, the choice, the attention rows, the lens's states, the cache's size and the clock:
    one read of the device's results a step (the graph itself is outside the count: fullgraph has no
    read in it). The eager path, counted the same way, reads the token apart from its choice (and its
    rows and states apart when it watches)."""
    from engine.compiled.graph import GraphStep
    real = GraphStep.__call__

    def outside(self, token, position):
        with torch.overrides._pop_mode_temporarily():
            return real(self, token, position)
    monkeypatch.setattr(GraphStep, "__call__", outside)
    counted, per_step = CountReads(), []
    events = stream_trace(llama, "Count to five.", settings)
    for event in events:
        if event.kind == "prefill":
            break
    while True:
        with counted:
            try:
                event = next(events)
            except StopIteration:
                break
        if event.kind == "step":
            per_step.append(len(counted.reads))
            counted.reads.clear()
    assert event.trace.observation.decode == "compiled" and len(per_step) == settings.max_new_tokens - 1
    assert per_step == [1] * len(per_step), per_step
    eager_reads = CountReads()
    with eager_reads:
        eager(llama, "Count to five.", settings)
    assert len(eager_reads.reads) >= 2 * settings.max_new_tokens, len(eager_reads.reads)
