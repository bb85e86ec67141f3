"""Every wait of a worker thread has a limit, and no folder is made at import.

- runs.background: a closed job whose work does not stop in time is left to end on its own; the
  closing caller (a Gradio worker) goes on.
- main_thread.MainThread.run: a worker waiting for the main thread gives up with TimeoutError, and a
  step not started by then is dropped.
- charts_out, links and the API's kept files: temp folders made on first use, removed at exit."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.compiled.main_thread import MainThread
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


def test_a_worker_waiting_for_the_main_thread_gives_up():
    main = MainThread()
    main.serving = True            # it says it serves, but nothing takes the jobs (a stuck main thread)
    caught: list = []

    def worker():
        try:
            main.run(lambda: "stepped", timeout_s=0.05)
        except TimeoutError as exc:
            caught.append(exc)
    t = threading.Thread(target=worker)
    t.start()
    t.join(30)
    assert not t.is_alive() and caught and "main thread" in str(caught[0])
    _, _, done = main.jobs.get_nowait()
    assert done.cancelled()        # the main thread, once free, skips it


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
    from engine.compiled import fast
    release = threading.Event()
    worker = threading.Thread(target=release.wait, args=(60,), daemon=True)
    worker.start()
    path = object.__new__(fast.FastPath)                     # only what compile_now reads before it would build
    path._worker, path._state = worker, {512: "building"}
    monkeypatch.setattr(fast, "BUILD_WAIT_S", 0.05)
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
