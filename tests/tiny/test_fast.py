"""The compiled decode path (engine/compiled/fast.py, engine/compiled/aoti.py) on the tiny llama (random
weights, the embedded tokenizer; tests/tiny/models.py): the step's AOTInductor package builds (or is found
on disk) and loads, a compiled run gives `generate`'s greedy tokens and the eager path's captures, and
whatever the step cannot serve stays on the eager path.

The package is built once per machine (under a minute on two cores, kept under TBT_COMPILE_CACHE), in
this process: the only build of the suite (the apps the tests start run with TBT_COMPILE=0). The tiny
model: the step is the same code for any model it fits (engine/compiled/fit.py; the embedded model's
30 layers made the build 2-3 minutes), and the embedded model's package is what `make bench` builds and
times as a host does. It is loaded once for this module on the tiny engine, which is eager again when
the module ends.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
import torch

from engine import Settings, Trace, run_trace, stream_trace
from engine.compiled.fast import BUCKETS, bucket_for
from engine.model.lens import exported
from engine.bench.compiled import PROMPTS, fast_figures, greedy_ids, identical
from engine.run.fork import run_fork
from engine.run.prefixes import cache_key
from ui.chapters.run import status_md
from engine.schema.validate import validate
from tests import numerics

# a package build (most of a minute on a fresh machine): make test runs it, make quick does not
pytestmark = pytest.mark.slow
BUCKET = BUCKETS[0]
WATCHED = Settings(max_new_tokens=24, ignore_eos=True, attention=True, logit_lens=True)


@pytest.fixture(scope="module")
def llama(tiny_engine):
    """The tiny llama's engine, shared with the tier's other modules (tests/tiny/conftest.py)."""
    return tiny_engine("llama")


@pytest.fixture(scope="module")
def fast(llama):
    """The path itself is tested here, whatever its speed on this machine: TBT_COMPILE_PAYS=0 keeps the
    package (the verdict, kept only at >= 1.15x, is tests/unit/test_compiled_verdict.py's and this
    module's last test's), and the check's rounds do not wait for a quiet window (engine/compiled/check.py).
    TBT_COMPILE_AUTOTUNE=0: Inductor does not time its GEMM choices (the graph, its inputs, outputs
    and captures are the same; `make bench` builds as a host does). Measured on two cores (Intel Xeon,
    2026-12-06, an empty cache): the embedded model's build 115-138 s with max-autotune, 72 s without;
    the tiny llama's 14 s without. The tiny engine is eager again afterwards (llama.fast = None): the compiled path
    turned on here never reaches another module's runs, whatever order the tests run in."""
    from engine.compiled import check
    mp = pytest.MonkeyPatch()
    mp.setenv("TBT_COMPILE_PAYS", "0")
    mp.setenv("TBT_COMPILE_AUTOTUNE", "0")
    mp.setattr(check, "QUIET_WAIT_S", 0.0)
    try:
        yield llama.start_fast(wait=True)
    finally:
        llama.fast = None
        mp.undo()


def eager(llama, prompt: str, settings: Settings, **kwargs) -> Trace:
    kept, llama.fast = llama.fast, None
    try:
        return run_trace(llama, prompt, settings, **kwargs)
    finally:
        llama.fast = kept


def parted_off_ties(llama, same: dict, new_tokens: int) -> list[str]:
    """`identical`'s prompts (engine/bench/compiled.py) whose compiled run parts from `generate` other
    than at a near tie (tests/numerics.py: two greedy paths); a prompt that parted is run again here for
    its steps' top-two gaps (the same path on the same machine: the same run)."""
    wrong = []
    for prompt, result in same.items():
        if result["equal"]:
            continue
        trace = run_trace(llama, prompt, Settings(max_new_tokens=new_tokens))
        ours, theirs = [s.id for s in trace.steps], greedy_ids(llama, prompt, new_tokens)
        gaps = numerics.margins(trace.steps)
        if not numerics.same_greedy(ours, theirs, gaps):
            wrong.append(f"{prompt!r}: {numerics.parted(ours, theirs, gaps)} ({result})")
    return wrong


def test_the_step_builds_loads_and_says_what_its_build_measured(fast):
    assert fast is not None
    assert fast.state("plain", BUCKET) == "ready" and fast.state("watch", BUCKET) == "ready", fast.describe()
    built = fast.describe()[f"step@{BUCKET}"]
    assert built["same_tokens"] is True and built["compiled_ms"] > 0 and built["pays_at"] == 0, built
    assert built["ratio"] == pytest.approx(built["eager_ms"] / built["compiled_ms"], rel=0.05), built
    assert fast.package(BUCKET).exists() and fast.package(BUCKET).with_suffix(".json").exists()
    assert not fast.ready("plain", None)          # a run longer than every bucket has no step


def test_the_app_s_way_loads_the_package_on_disk_and_status_says_so(llama, fast, monkeypatch):
    """What the app does at start (Engine.start_fast without wait: FastPath.build_in_background): the
    package built above is on disk with its verdict, so it is loaded as it is (no back-room build), and
    /status's "fast" says "ready" with what the build measured."""
    from types import SimpleNamespace

    from engine.host import backroom
    from engine.compiled.fast import FastPath
    from engine.schema.specs import EMBEDDED
    from tests.waits import wait_until
    from ui.api.status import StatusEndpoints
    from ui.chapters.run import compiled_md

    def no_build(*args, **kwargs):
        raise AssertionError("a back-room build of a package that is on disk")
    monkeypatch.setattr(backroom, "call", no_build)
    app_s = FastPath(llama.model, llama.device, llama.info.id)
    app_s.build_in_background(BUCKET)
    state = wait_until(lambda: (st := app_s.state("plain", BUCKET)) not in ("queued", "building") and st, 120,
                       "the package's load from disk", every_s=0.2)
    assert state == "ready", state
    kept, llama.fast = llama.fast, app_s
    try:
        models = SimpleNamespace(engine=llama, engines={EMBEDDED: llama}, allowed=[EMBEDDED], default=EMBEDDED,
                                 notice=lambda: "")
        step = StatusEndpoints(models).status()["fast"][f"step@{BUCKET}"]
        assert step["state"] == "ready" and step["same_tokens"] is True and step["pays_at"] == 0, step
        assert step["ratio"] == fast.describe()[f"step@{BUCKET}"]["ratio"]      # the sidecar's, not timed again
        assert compiled_md(llama, "en") is None            # a step in use: nothing to explain
        assert run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True)).observation.decode == "compiled"
    finally:
        llama.fast = kept


@pytest.mark.numerics
def test_compiled_greedy_tokens_equal_generate(llama, fast):
    result = identical(llama, 40, PROMPTS[:3])
    assert all(r["path"] == "compiled" for r in result.values()), result
    assert not parted_off_ties(llama, result, 40), result


@pytest.mark.numerics
def test_a_watched_compiled_run_captures_what_the_eager_path_captures(llama, fast):
    prompt = "什么是量子计算？"
    assert_watched_alike(llama, run_trace(llama, prompt, WATCHED), eager(llama, prompt, WATCHED), BUCKET)


def assert_watched_alike(llama, compiled: Trace, reference: Trace, bucket: int) -> None:
    """A compiled run's tokens, cache curve, attention rows and lens are the eager run's (tests/numerics.py)."""
    assert (compiled.observation.decode, compiled.observation.static_cache_tokens) == ("compiled", bucket)
    assert (reference.observation.decode, reference.observation.static_cache_tokens) == ("eager", None)
    got, want, gaps = [s.id for s in compiled.steps], [s.id for s in reference.steps], numerics.margins(reference.steps)
    numerics.assert_same_greedy(got, want, gaps)
    alike = numerics.fed_alike(got, want)         # the passes that read the same tokens: all, unless parted at a tie
    # the static cache's bytes count only the written slots: the same curve as the dynamic cache
    assert [s.kv_bytes for s in compiled.steps] == [s.kv_bytes for s in reference.steps]
    assert [s.kv_tokens for s in compiled.steps] == [s.kv_tokens for s in reference.steps]
    assert compiled.summary.kv_bytes_final == reference.summary.kv_bytes_final
    # attention rows from the graph's outputs: the eager capture's rows, over exactly the cached keys
    # (a trace stores them in steps of 1/4095, each rounded its own way: PACKED_PAIR)
    assert len(compiled.attention.steps) == len(reference.attention.steps)
    for mine, theirs in zip(compiled.attention.steps[:alike], reference.attention.steps[:alike]):
        a, b = mine.unpack(), theirs.unpack()
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=numerics.PACKED_PAIR)
    lens_gaps = numerics.lens_margins(llama, reference.steps[:alike])
    lensed = zip(exported(llama, compiled).steps[:alike], exported(llama, reference).steps[:alike], lens_gaps)
    for mine, theirs, g in lensed:     # the lens from the graph's hidden states
        got, want = [x.id for x in mine.lens], [x.id for x in theirs.lens]
        numerics.assert_same_tops(got, want, g)
        p, q = [x.p for x in mine.lens], [x.p for x in theirs.lens]
        assert numerics.close(p, q, 1), numerics.worst(p, q)
    validate(Trace.from_json(compiled.to_json()))
    assert "compiled" in status_md(compiled, "en") and "已编译" in status_md(compiled, "zh")
    assert "eager" in status_md(reference, "en")


def test_runs_of_any_prompt_length_use_the_one_step(llama, fast):
    plain = Settings(max_new_tokens=12, ignore_eos=True)
    for prompt, settings in [("Hello, world!", plain), ("A much longer prompt " * 20, plain),
                             ("Hi", dataclasses.replace(WATCHED, max_new_tokens=6))]:
        assert run_trace(llama, prompt, settings).observation.decode == "compiled"


@pytest.mark.numerics
def test_sampling_stays_outside_the_graph(llama, fast):
    sampled = Settings(max_new_tokens=20, temperature=0.9, top_k=40, top_p=0.95, seed=7, ignore_eos=True)
    compiled, reference = run_trace(llama, "Tell me a story.", sampled), eager(llama, "Tell me a story.", sampled)
    assert compiled.observation.decode == "compiled"
    assert [s.id for s in compiled.steps] == [s.id for s in reference.steps]


def test_what_the_step_cannot_serve_stays_eager(llama, fast):
    long = Settings(max_new_tokens=BUCKET, ignore_eos=True)          # prompt + new tokens > the bucket
    events = stream_trace(llama, "Hello", long)
    for event in events:
        if event.kind == "step":
            break
    events.close()
    assert event.trace.observation.decode == "eager"
    assert bucket_for(len(event.trace.prompt.tokens) + BUCKET, llama.info.context_length) is None
    no_cache = Settings(max_new_tokens=4, use_cache=False)
    assert run_trace(llama, "Hello", no_cache).observation.decode == "eager"


@pytest.mark.numerics
def test_a_compiled_run_can_be_forked(llama, fast):
    run = run_trace(llama, "Name three colours.", Settings(max_new_tokens=10, ignore_eos=True), keep_cache=True)
    assert run.observation.decode == "compiled"
    kept = llama.prefixes.get(cache_key(run))
    assert kept.get_seq_length() == len(run.prompt.tokens) + len(run.steps) - 1   # the last token was not fed
    assert_forks_as_generate(llama, run)


def assert_forks_as_generate(llama, run: Trace, at: int = 4) -> None:
    """A branch at `at` with the step's second candidate reuses the kept cache and goes on as `generate`
    does from the same tokens."""
    token = next(c.id for c in run.steps[at].candidates if c.id != run.steps[at].id)
    branch = run_fork(llama, run, at, token, max_new_tokens=6).branches[-1]
    assert branch.rebuilt_ms is None
    prefix = [t.id for t in run.prompt.tokens] + [s.id for s in run.steps[:at]] + [token]
    with torch.inference_mode():
        out = llama.model.generate(input_ids=torch.tensor([prefix]), max_new_tokens=6, min_new_tokens=6,
                                    do_sample=False)
    got, want = [s.id for s in branch.steps[1:]], out[0, len(prefix):].tolist()
    numerics.assert_same_greedy(got, want, numerics.margins(branch.steps[1:]))


@pytest.mark.numerics
def test_the_bench_figures(llama, fast):
    result = fast_figures(llama, PROMPTS[0], new_tokens=8, repeats=1)
    # fast_identical: every prompt's tokens equal generate's; a parting at a near tie is no fault
    assert result["fast_identical"] is True or not parted_off_ties(llama, result["fast_identical_prompts"], 8), \
        result["fast_identical_prompts"]
    assert set(result["fast_identical_prompts"]) == set(PROMPTS)
    for key in ("fast_tok_s", "fast_ratio", "fast_capture_tok_s", "fast_capture_ratio", "fast_tpot_ms",
                "fast_hf_generate_tok_s"):
        assert result[key] > 0, key
    # one repeat: the ratio is that round's ratio
    assert result["fast_ratio"] == pytest.approx(result["fast_tok_s"] / result["fast_hf_generate_tok_s"])
    assert result["fast_static_cache_tokens"] == BUCKET
    assert greedy_ids(llama, PROMPTS[2], 8)        # the reference itself produces tokens


def test_a_run_beside_a_compile_says_its_times_suffer(llama, fast, monkeypatch):
    monkeypatch.setattr(fast, "compiling", 1)          # as while an in-process build runs
    trace = run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True))
    assert trace.observation.beside_compile
    assert "being built in the background" in status_md(trace, "en") and "后台正在编译" in status_md(trace, "zh")
    monkeypatch.setattr(fast, "compiling", 0)
    assert not run_trace(llama, "Hi", Settings(max_new_tokens=3, ignore_eos=True)).observation.beside_compile


def test_other_threads_step_through_the_serving_main_thread(llama, fast):
    """The app's runs are on worker threads: their compiled steps go to the main thread, which
    serves them (here: this test's thread, the main one); without it they decode eagerly."""
    import threading
    from engine.compiled.fast import MAIN
    results, stop = {}, threading.Event()

    def visitor(wait_for_main: bool = False):
        while wait_for_main and not MAIN.serving:
            time.sleep(0.01)
        try:
            results["trace"] = run_trace(llama, "Hello", Settings(max_new_tokens=4, ignore_eos=True))
            results["thread"] = threading.current_thread() is not threading.main_thread()
        finally:
            stop.set()

    alone = threading.Thread(target=visitor)
    alone.start()
    alone.join()                                     # nobody serves: that run decoded eagerly
    assert results["trace"].observation.decode == "eager" and results["thread"]
    stop.clear()
    served = threading.Thread(target=visitor, args=(True,))
    served.start()
    MAIN.serve(stop)
    served.join()
    assert results["trace"].observation.decode == "compiled" and not MAIN.serving
    assert fast.in_use == 0


def test_a_package_timed_slower_on_a_busy_machine_is_timed_again_and_deleted_on_a_quiet_verdict(
        llama, fast, tmp_path, monkeypatch):
    """A build on a busy machine can time the compiled step slower than eager: that verdict is not
    final (the package stays on disk, unloaded) and the next start times it again. A verdict under the
    shipped threshold deletes a package that does not reach it; differing tokens stay refused."""
    import json
    import shutil

    from engine.compiled import aoti
    path = tmp_path / fast.package(BUCKET).name
    shutil.copy(fast.package(BUCKET), path)
    # the sidecar as a busy build under this rule wrote it (pays_at: the package folder is shared, and
    # another process on this host may have given the verdict on disk under the shipped rule)
    busy = {**json.loads(fast.package(BUCKET).with_suffix(".json").read_text()),
            "use": False, "final": False, "eager_ms": 313.0, "compiled_ms": 1210.0, "pays_at": aoti.pays()}
    path.with_suffix(".json").write_text(json.dumps(busy))
    meta = aoti.ready_meta(fast.model, llama.model, llama.device, BUCKET, path)
    assert (meta["eager_ms"], meta["compiled_ms"]) != (313.0, 1210.0)            # timed again
    assert json.loads(path.with_suffix(".json").read_text()) == meta              # and kept
    monkeypatch.setenv("TBT_COMPILE_PAYS", "1000")                                # a rule no step reaches
    meta = aoti.ready_meta(fast.model, llama.model, llama.device, BUCKET, path)
    assert not meta["use"] and "1000" in meta["why"]
    assert meta["final"] is False or not path.exists()    # a quiet verdict deletes it; a busy one keeps it
    refused = {**meta, "use": False, "same_tokens": False, "final": True, "why": "its greedy tokens differ"}
    path.with_suffix(".json").write_text(json.dumps(refused))
    assert aoti.ready_meta(fast.model, llama.model, llama.device, BUCKET, path) == refused   # stays refused


# --- the compiled step's waits (engine/compiled/main_thread.py): a run never lost, never held by the
# main thread for another's lock ---------------------------------------------------------------------

@pytest.fixture
def main_serves_late(monkeypatch):
    """The main thread's queue as the app has it, its step bound cut to 0.3 s, and `serve(visitors,
    after_s)`: start the visitors (worker threads), let the main thread serve their steps after
    `after_s` (until they end), join them. Jobs left in the queue are dropped afterwards."""
    import threading
    from engine.compiled import main_thread
    from engine.compiled.fast import MAIN
    monkeypatch.setattr(main_thread, "STEP_WAIT_S", 0.3)
    monkeypatch.setattr(MAIN, "serving", True)     # steps are asked of it: it says it serves (as in the app)

    def serve(visitors, after_s: float | None = 0.0):
        threads = [threading.Thread(target=v) for v in visitors]
        for t in threads:
            t.start()
        if after_s is not None:
            time.sleep(after_s)
            stop = threading.Event()
            threading.Thread(target=lambda: ([t.join(60) for t in threads], stop.set())).start()
            MAIN.serve(stop)
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    try:
        yield serve
    finally:
        while not MAIN.jobs.empty():
            MAIN.jobs.get_nowait()


def test_a_step_the_main_thread_never_runs_ends_the_run_with_its_steps_said_and_kept(llama, fast, main_serves_late):
    """A stuck main thread: the run's first compiled step times out; the run ends "timeout" with the
    prefill's token, the page's last update carries that trace and says why in its language, and the
    run's cache is not kept for forks (the dropped step might still write into it)."""
    from ui.chapters.run import Run
    shown = {}

    def visitor(lang):
        events = stream_trace(llama, "Hello", Settings(max_new_tokens=6, ignore_eos=True), keep_cache=True)
        shown[lang] = list(Run.shown(events, llama, lang))
    main_serves_late([lambda: visitor("en"), lambda: visitor("zh")], after_s=None)   # nobody serves
    for lang, sentence in (("en", "was not run in time"), ("zh", "没能及时执行")):
        trace, status = shown[lang][-1][0], shown[lang][-1][2]
        assert isinstance(trace, Trace) and trace.summary.stop_reason == "timeout", (lang, trace)
        assert trace.observation.decode == "compiled" and len(trace.steps) == 1
        assert sentence in status, status
        validate(trace)
        assert llama.prefixes.get(cache_key(trace)) is None
    assert fast.in_use == 0


def test_a_compiled_run_waits_for_its_engine_s_lock_as_an_eager_run_does(llama, fast, main_serves_late):
    """Whatever holds the engine's lock mid-run (a fork's pass, the floor, the lab) holds the run's next
    step on the run's own thread, where its time limit has not started: held 1 s, three times the
    step's bound, the run goes on and ends as it would have. (The main thread took the lock inside
    the step: it stood still for the holder, the step timed out and the run was lost.)"""
    import threading
    settings = Settings(max_new_tokens=5, ignore_eos=True)
    alone = run_trace(llama, "Hello", settings)
    stepped, held, ended = threading.Event(), threading.Event(), {}

    def holder():
        stepped.wait(30)
        with llama.lock:
            held.set()
            time.sleep(1.0)

    def visitor():
        events = stream_trace(llama, "Hello", settings)
        for event in events:
            if event.kind == "step" and not stepped.is_set():
                stepped.set()          # one compiled step done: the lock is taken before the next
                held.wait(30)
        ended["trace"] = event.trace
    main_serves_late([holder, visitor])
    trace = ended["trace"]
    assert trace.summary.stop_reason == "max_tokens" and trace.observation.decode == "compiled"
    assert [s.id for s in trace.steps] == [s.id for s in alone.steps]


def test_runs_of_one_model_take_one_place_in_the_main_thread_s_queue(llama, fast, main_serves_late, monkeypatch):
    """Three runs of one model at once, the main thread serving late: one step of theirs waits in the
    queue, the other runs wait for the model's lock (so the queue's size is not a limit on runs, and
    runs beyond it do not time out waiting for room); all three end as they would alone."""
    from engine.compiled import main_thread
    from engine.compiled.fast import MAIN
    monkeypatch.setattr(main_thread, "STEP_WAIT_S", 10.0)      # the queue is what is watched here, not time
    settings, ended, most = Settings(max_new_tokens=4, ignore_eos=True), [], []
    put = MAIN.jobs.put

    def counted(job, *args, **kwargs):
        put(job, *args, **kwargs)
        most.append(MAIN.jobs.qsize())
    monkeypatch.setattr(MAIN.jobs, "put", counted)
    main_serves_late([lambda: ended.append(run_trace(llama, "Hello", settings))] * 3, after_s=0.5)
    assert len(ended) == 3 and all(t.summary.stop_reason == "max_tokens" for t in ended)
    assert all(t.observation.decode == "compiled" for t in ended) and max(most) == 1, most
