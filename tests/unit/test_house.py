"""The house's heavy work yields to visitors (engine/host/house.py, engine/host/backroom.py): a back-room job
is stopped while a visitor's run is in progress and its clock leaves the pause out; errors and
Stop reach the caller."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

from engine.host import backroom
from engine.errors import EngineError
from engine.host.house import HOUSE, House, Job, Ledger
from tests.waits import wait_until

TARGET = "tests.backroom_jobs"


def test_the_ledger_counts_pauses_for_every_reader():
    ledger = Ledger()
    reader = Ledger(ledger.path)                 # what a child maps
    try:
        ledger.pause_begins()
        time.sleep(0.2)
        assert reader.paused_ns() >= 0.2e9 and reader.pauses == 1
        ledger.pause_ends()
        done = reader.paused_ns()
        time.sleep(0.1)
        assert reader.paused_ns() == done         # no pause in progress: it stands still
    finally:
        reader.close()
        ledger.close()


def test_a_job_stands_still_while_a_visitor_runs():
    import subprocess
    import sys
    house = House()
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"], process_group=0)
    try:
        job = house.add(Job("lab", "spin", pgid=proc.pid))
        status = psutil.Process(proc.pid).status
        with house.visitor_run():
            wait_until(lambda: status() == psutil.STATUS_STOPPED, 5, "the job stopped (SIGSTOP)")
            assert job.paused and job.interrupted.is_set()
            assert house.describe()["jobs"][0]["paused"] is True
        wait_until(lambda: status() != psutil.STATUS_STOPPED, 5, "the job running again (SIGCONT)")
        assert not job.paused
        assert (job.pauses, job.runs_between) == (1, 1)
        assert house.quiet(timeout=0.1)
    finally:
        proc.kill()
        proc.wait()


def test_a_back_room_job_pauses_for_visitors_and_its_clock_leaves_the_pause_out():
    seen = []

    def visitor():
        # the child is at work (python and its imports done): it has reported progress
        wait_until(lambda: seen, 120, "the back-room job's first progress")
        paused_before = HOUSE.ledger.paused_ns()
        with HOUSE.visitor_run():            # the visitor's run lasts until the job has stood still 0.2 s
            wait_until(lambda: HOUSE.ledger.paused_ns() - paused_before >= 0.2e9, 30,
                       "the job stopped 0.2 s for the visitor's run")
    thread = threading.Thread(target=visitor)
    thread.start()
    result = backroom.call("lab", "test", f"{TARGET}:busy", {"seconds": 2.0},
                           progress=lambda f, t: seen.append(f))
    thread.join()
    assert result["cancelled"] is False and seen
    # the lowest priority, in a process group of its own (what SIGSTOP reaches)
    assert result["nice"] == 19 and result["sched_idle"] and result["io_idle"] and result["pgid"] == result["pid"]
    stood = result["backroom"]
    assert stood["pauses"] == 1 and stood["visitor_runs_between"] == 1 and stood["paused_s"] >= 0.2, stood
    # its own clock ran its 2 s of work (the job stops at 2 s of it); the wall clock also saw the pause,
    # which the job's clock left out: the difference is the pause the house recorded (to its rounding)
    assert result["work_s"] >= 2.0, result
    assert result["wall_s"] - result["work_s"] == pytest.approx(stood["paused_s"], abs=0.02), (result, stood)
    assert not HOUSE.jobs


def test_errors_and_stop_reach_the_caller():
    with pytest.raises(EngineError, match="no such experiment"):
        backroom.call("lab", "test", f"{TARGET}:refuses")
    cancel = threading.Event()
    threading.Timer(2.5, cancel.set).start()
    result = backroom.call("lab", "test", f"{TARGET}:busy", {"seconds": 60.0}, cancel=cancel)
    assert result["cancelled"] is True
    with pytest.raises(backroom.BackroomError, match="ModuleNotFoundError"):
        backroom.call("lab", "test", "no_such_module:fn")
