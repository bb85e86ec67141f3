"""ui/runs.background: long work on a thread of the process that streams its progress, stops when
its generator is closed, and hands back its result or its exception."""

import threading
import time

import pytest

from ui.host.runs import background


def counting(cancel: threading.Event, steps: int, each_s: float = 0.02):
    def work(progress):
        for i in range(steps):
            if cancel.is_set():
                return ("stopped", i)
            progress(i / steps, f"step {i}")
            time.sleep(each_s)
        return ("done", steps)
    return work


def test_progress_then_the_result():
    cancel = threading.Event()
    gen = background(counting(cancel, 20), cancel, lambda f, text: (f, text), every=0.05)
    seen = []
    try:
        while True:
            seen.append(next(gen))
    except StopIteration as stop:
        result = stop.value
    assert result == ("done", 20) and seen and all(text.startswith("step") or text == "" for _, text in seen)
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)


def test_closing_the_generator_stops_the_work_in_this_process():
    cancel = threading.Event()
    gen = background(counting(cancel, 10_000), cancel, lambda f, text: text, every=0.02)
    next(gen)
    started = time.monotonic()
    gen.close()                                    # what spaces does in the worker on Stop
    assert cancel.is_set() and time.monotonic() - started < 1.0
    assert not any(t.name == "tbt-background" and t.is_alive() for t in threading.enumerate())


def test_the_works_exception_reaches_the_caller():
    def work(progress):
        raise ValueError("bad budget")
    with pytest.raises(ValueError, match="bad budget"):
        list(background(work, threading.Event(), lambda f, t: t))


def test_a_job_without_news_repeats_itself_on_a_beat_only_where_asked():
    """ZeroGPU's worker sees a Stop only as an item goes by: there (beat_s) a job standing still says
    its progress again; elsewhere a quiet job sends nothing (the page stays quiet)."""
    def still(progress):
        progress(0.5, "half")
        time.sleep(0.6)
        return "done"

    def items(beat_s):
        gen, seen = background(still, threading.Event(), lambda f, t: t, every=0.05, beat_s=beat_s), []
        try:
            while True:
                seen.append(next(gen))
        except StopIteration as stop:
            assert stop.value == "done"
        return seen
    assert items(None) == ["half"]
    beaten = items(0.1)
    assert len(beaten) >= 3 and set(beaten) == {"half"}


def test_on_zerogpu_the_pages_stop_flag_closes_the_gpu_call_between_its_items(monkeypatch):
    """ui/host/runs.closed_on_stop (Explore's run, the lab's experiments): Stop ends the worker's call
    from the page's process, whether or not Gradio closes the cancelled event's generator; elsewhere the
    call is left as it is (its own flag stops it)."""
    from types import SimpleNamespace
    from ui.host import runs
    closed, request, flags = [], SimpleNamespace(session_hash="tab-1"), runs.StopFlags()

    def call(results, lang, model_id, request):     # the GPU call: items forever
        try:
            n = 0
            while True:
                n += 1
                yield n
        finally:
            closed.append(n)
    assert runs.closed_on_stop(call, flags) is call             # not on ZeroGPU
    monkeypatch.setattr(runs, "ZERO_GPU", True)
    items = runs.closed_on_stop(call, flags)(None, "en", "m", request)
    assert [next(items), next(items)] == [1, 2]
    flags.stop_tab(request)                    # the Stop button, in the page's process
    assert list(items) == [] and closed == [2]     # closed before its next item
    assert len(flags) == 0
