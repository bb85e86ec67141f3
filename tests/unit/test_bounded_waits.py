"""Every wait of a worker thread has a limit, every queue a size, and no folder is made at import.

`test_every_wait_in_engine_and_ui_has_a_bound` reads the source of engine/, ui/ and app.py: a call
that can block (wait, join, result, acquire, get, put, wait_for, quiet) with no timeout, or a queue
with no maxsize, is a failure unless BOUNDED below names it and says what bounds it. The waits with
a timeout, and their bounds:

- runs.background: a closed job whose work does not stop in time (CANCEL_WAIT_S) is left to end on
  its own; the closing caller (a Gradio worker) goes on.
- main_thread.MainThread.run: a worker waiting for the main thread gives up with TimeoutError after
  STEP_WAIT_S (the queue's room included; MAX_JOBS jobs at most), a step not started by then is
  dropped, and one started commits nothing to its run's trace after that.
- house.House: a visitor's pass waits for a back-room job's turn at most turn_s + DRAIN_S; a turn
  waits for the passes in flight at most DRAIN_S; the compiled step's load waits hold_s for a quiet
  house, then takes a turn. backroom.call: its child's lines (LINES_KEPT) and a deadline
  (TBT_BACKROOM_DEADLINE_S) after which the child is ended and the visitor told.
- models: a call waits for a model's load at most TBT_MODEL_WAIT_S; fast.compile_now: BUILD_WAIT_S;
  lab.host.watching_load: WATCH_WAIT_S; floor.continuous: FEEDER_WAIT_S; the load sweep: its deadline.
- charts_out, links and the API's kept files: temp folders made on first use, removed at exit."""

import ast
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.compiled.main_thread import Abandoned, MainThread
from ui.host.runs import TempFolder, background

ROOT = Path(__file__).resolve().parents[2]


def test_a_closed_job_that_ignores_its_cancel_does_not_hold_the_caller():
    release, entered = threading.Event(), threading.Event()

    def stubborn(progress):
        entered.set()
        release.wait(60)           # a library call that never looks at `cancel`
        return "late"
    cancel = threading.Event()
    gen = background(stubborn, cancel, lambda f, t: t, every=0.01, cancel_wait_s=0.05)
    next(gen)                      # started: its first progress is out
    entered.wait(10)
    closer = threading.Thread(target=gen.close)          # what Stop does on ZeroGPU
    closer.start()
    closer.join(30)
    try:
        assert not closer.is_alive() and cancel.is_set()       # close came back...
        worker = [t for t in threading.enumerate() if t.name == "tbt-background"]
        assert worker and worker[0].is_alive()                  # ...while the work still runs
    finally:
        release.set()


def steps_from_a_worker(main: MainThread, steps: int) -> list:
    """`steps` compiled steps asked of `main` one after the other from a worker thread, as a run does;
    the timeouts they met (the thread must end: every wait is bounded)."""
    caught: list = []

    def worker():
        for _ in range(steps):
            try:
                main.run(lambda: "stepped", timeout_s=0.05)
            except TimeoutError as exc:
                caught.append(exc)
    t = threading.Thread(target=worker)
    t.start()
    t.join(30)
    assert not t.is_alive()
    return caught


def test_a_worker_waiting_for_the_main_thread_gives_up():
    main = MainThread()
    main.serving = True            # it says it serves, but nothing takes the jobs (a stuck main thread)
    caught = steps_from_a_worker(main, 1)
    assert caught and "main thread" in str(caught[0])
    assert main.jobs.get_nowait().done.cancelled()        # the main thread, once free, skips it


def test_the_main_threads_queue_has_a_size_and_a_full_one_is_a_timeout():
    main = MainThread(max_jobs=1)
    main.serving = True            # nothing takes the jobs
    assert len(steps_from_a_worker(main, 3)) == 3          # three runs' steps, one after the other
    assert main.jobs.qsize() == 1  # the first waits (cancelled) for the main thread; the others found no room


def test_a_compiled_step_that_timed_out_never_reaches_the_trace():
    """The main thread (this test's) takes a step after its run gave up waiting: it runs, but what
    it would write into the trace (`committing`) is refused; a step in time is written as before."""
    main, trace, outcome = MainThread(), [], []
    gave_up, stop = threading.Event(), threading.Event()

    def step(token):
        if token == "late":
            gave_up.wait(30)       # the main thread was busy elsewhere: the run stopped waiting
        try:
            with main.committing():
                trace.append(token)
            outcome.append((token, "recorded"))
        except Abandoned:
            outcome.append((token, "dropped"))
        return token

    def run():                     # a visitor's run on a worker thread
        try:
            with pytest.raises(TimeoutError):
                main.run(step, "late", timeout_s=0.2)
            gave_up.set()
            assert main.run(step, "in time", timeout_s=30) == "in time"
        finally:
            stop.set()
    main.serving = True            # as serve() says, before the run asks
    worker = threading.Thread(target=run)
    worker.start()
    main.serve(stop)               # until the run is done
    worker.join(30)
    assert outcome == [("late", "dropped"), ("in time", "recorded")]
    assert trace == ["in time"]
    assert main.committing().__class__.__name__ == "nullcontext"      # outside a job: nothing to refuse


# Calls that block with no timeout of their own, and what bounds each (file, source text): the rule above.
BOUNDED = {
    ("engine/floor/serve.py", "watch.result()"): "LoadWatch.result joins its sampler for WATCH_WAIT_S",
    ("engine/lab/__init__.py", "watch.result()"): "LoadWatch.result joins its sampler for WATCH_WAIT_S",
    ("engine/lab/host.py", "watch.result()"): "LoadWatch.result joins its sampler for WATCH_WAIT_S",
    ("engine/profile/run.py", "load.result()"): "LoadWatch.result joins its sampler for WATCH_WAIT_S",
    ("engine/served/load.py", "f.result()"): "each stream reads with the endpoint's connect and read timeouts, "
                                             "and stops when the wave is cut",
    ("ui/host/models.py", "self.wait()"): "Models.wait waits TBT_MODEL_WAIT_S at most (its default)",
}
BLOCKING = {"wait", "join", "result", "acquire", "get", "put", "wait_for", "quiet"}
QUEUES = {"Queue", "SimpleQueue", "LifoQueue", "PriorityQueue"}


def unbounded_calls(path: Path) -> list[str]:
    """Source texts of calls in `path` that may block for ever: a blocking method with no timeout
    argument (str.join always has one positional argument, so "x.join()" is a thread's), or a
    queue made without a maxsize."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        f, given = node.func, {k.arg for k in node.keywords}
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name in QUEUES and not node.args and "maxsize" not in given:
            found.append(ast.unparse(node))
        elif name in BLOCKING and isinstance(f, ast.Attribute):
            positional = 1 if name in ("wait_for", "put") else 0      # the predicate, the item
            if len(node.args) <= positional and not given & {"timeout", "timeout_s", "blocking", "block"}:
                found.append(ast.unparse(node))
    return found


def test_every_wait_in_engine_and_ui_has_a_bound():
    files = [ROOT / "app.py", *sorted((ROOT / "engine").rglob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]
    seen = {(str(p.relative_to(ROOT)), call) for p in files for call in unbounded_calls(p)}
    assert seen - set(BOUNDED) == set(), "a wait with no bound (add a timeout, or say in BOUNDED what bounds it)"
    assert set(BOUNDED) <= seen                     # the list names only waits that are there


CHILD = """
import os, sys
from ui.host import runs
from ui.share import charts_out, links
import ui.api
assert not os.listdir(sys.argv[1]), os.listdir(sys.argv[1])    # nothing at import
print(runs.TraceFiles().write_text("{}"), charts_out.FOLDER.fresh(), links.DECKS.fresh())
assert len(os.listdir(sys.argv[1])) == 3
"""


def test_no_temp_folder_at_import_and_none_left_at_exit(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(str(tmp_path) in p for p in done.stdout.split())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("tbt-")]    # removed at exit


def test_a_temp_folder_keeps_its_newest_files(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    place = TempFolder("t", keep=3)
    assert not place.made
    for i in range(6):
        (place.fresh() / f"f{i}").write_text(str(i))
    kept = sorted(p.name for p in place.path().glob("*/*"))
    assert len(kept) <= 3 and "f5" in kept and "f0" not in kept


def test_a_call_waiting_for_a_model_that_never_loads_is_told_to_try_again():
    """The page is up before its model; a load that hangs must not hold the visitor's worker for ever:
    the default model's wait, the first model's imports and another model's load each give up."""
    import gradio as gr

    from ui.host import models
    m = models.Models(["embedded", "other/model"], load=False)     # the default never finishes loading
    try:
        with pytest.raises(gr.Error, match="still loading"):
            m.wait("en", timeout_s=0.05)
        with pytest.raises(models.StillLoading, match="still loading"):
            models.first_model_loaded(timeout_s=0.05)
        m._ready.set()                                          # the default is in; another call loads "other"
        m._loading["other/model"] = gate = threading.Lock()
        gate.acquire()
        with pytest.raises(gr.Error, match="仍在加载"):
            m.get("other/model", "zh", timeout_s=0.05)
    finally:
        models._IMPORTED.set()                                  # other tests' page is not starting up


def test_a_compile_that_hangs_in_the_back_room_does_not_hold_compile_now(monkeypatch):
    from engine.compiled import builds, fast
    release = threading.Event()
    worker = threading.Thread(target=release.wait, args=(60,), daemon=True)
    worker.start()
    path = object.__new__(fast.FastPath)                     # only what compile_now reads before it would build
    path._worker, path._state = worker, {512: "building"}
    monkeypatch.setattr(builds, "BUILD_WAIT_S", 0.05)
    try:
        assert path.compile_now("watch", 512) == "building"
    finally:
        release.set()


def test_a_load_watch_whose_last_sample_hangs_does_not_hold_the_measurement(monkeypatch):
    from engine.lab import host
    release, calls = threading.Event(), []
    real = host.LoadWatch._sample

    def sample(self):
        calls.append(1)
        if len(calls) > 1:
            release.wait(60)          # a read that never returns
        return real(self)
    monkeypatch.setattr(host.LoadWatch, "_sample", sample)
    monkeypatch.setattr(host, "WATCH_WAIT_S", 0.05)
    done = threading.Event()

    def measure():
        with host.watching_load():
            pass
        done.set()
    threading.Thread(target=measure, daemon=True).start()
    try:
        assert done.wait(30)
    finally:
        release.set()
