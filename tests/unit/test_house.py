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


def test_a_result_with_figures_that_are_not_numbers_arrives_and_says_where():
    """JSON carries no NaN: the child's writing of such a result failed and the caller got an unkeyed
    BackroomError instead of the result. It arrives now with None in their place, named."""
    result = backroom.call("lab", "test", f"{TARGET}:not_numbers")
    assert (result["ratio"], result["points"], result["steps"]) == (None, [1.0, None], 3)
    assert result["not_finite"] == ["ratio = nan", "points[1] = inf"]


def test_a_stray_line_on_the_child_s_output_is_skipped_not_a_failure():
    assert backroom.said('{"progress": 0.5, "text": "x"}') == {"progress": 0.5, "text": "x"}
    assert backroom.said("Loading weights... done\n") is None       # logged, skipped
    assert backroom.said("[1, 2]") is None and backroom.said("NaN") is None


def test_a_job_gets_turns_while_visitors_never_stop():
    """Runs back to back (one always in progress) no longer stop a job for good: after `hold_s` it
    has the machine for `turn_s`, visitors' passes waiting meanwhile; then it stands still again."""
    import subprocess
    import sys
    house = House(hold_s=0.3, turn_s=0.3)
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"], process_group=0)
    cpu = lambda: sum(psutil.Process(proc.pid).cpu_times()[:2])   # noqa: E731
    entered_in_turn: list = []
    try:
        with house.visitor_run():          # a visitor's run in progress for the whole test
            job = house.add(Job("lab", "spin", pgid=proc.pid))
            assert job.paused
            before = cpu()
            wait_until(lambda: job.turns >= 2, 30, "two turns of the job")
            for _ in range(20):            # the visitor's passes meanwhile: none inside a turn
                with house.visitor_pass():
                    entered_in_turn.append(house.turn_on)
            wait_until(lambda: job.paused and not house.turn_on, 30, "the job standing still after its turn")
            assert cpu() > before          # it did work while a visitor's run was in progress
            assert house.describe()["jobs"][0]["turns"] >= 2
        assert not any(entered_in_turn)
        wait_until(lambda: not job.paused, 5, "the job running once the visitor left")
    finally:
        house.remove(job)
        proc.kill()
        proc.wait()


def test_a_job_past_its_deadline_is_ended_and_its_visitor_told():
    with HOUSE.visitor_run():              # visitors keep coming; the job gets only its turns
        with pytest.raises(EngineError, match="did not finish") as caught:
            backroom.call("lab", "test", f"{TARGET}:busy", {"seconds": 600.0}, deadline_s=1.0)
    assert caught.value.key == "backroom_deadline"
    assert not HOUSE.jobs


def test_a_job_past_its_deadline_alone_is_not_blamed_on_other_visitors():
    """The deadline is wall time; the job knows how long it stood still. With nobody else running,
    the sentence says it was the job's own length (it blamed "other visitors' runs" either way)."""
    with pytest.raises(EngineError, match="its own work") as caught:
        backroom.call("lab", "test", f"{TARGET}:busy", {"seconds": 600.0}, deadline_s=1.0)
    assert caught.value.key == "backroom_deadline_own" and caught.value.values["stood"] == 0.0


def test_a_turn_never_starts_beside_a_visitor_s_pass(monkeypatch):
    """A pass longer than the drain (a long prefill): the turn gave the job the machine anyway after
    DRAIN_S, beside the pass, against "the job measures alone in its turn". It is given up now and
    tried again later; the job stands still for the whole pass, and gets its turn after it."""
    import subprocess
    import sys

    from engine.host import house as house_module
    monkeypatch.setattr(house_module, "DRAIN_S", 0.2)
    house = House(hold_s=0.3, turn_s=0.3)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], process_group=0)
    beside: list = []
    try:
        with house.visitor_run():
            job = house.add(Job("lab", "sleeps", pgid=proc.pid))
            with house.visitor_pass():      # 1.5 s: five holds, seven drains
                end = time.monotonic() + 1.5
                while time.monotonic() < end:
                    beside.append(job.paused)
                    time.sleep(0.01)
            wait_until(lambda: job.turns >= 1, 30, "the job's turn once the pass ended")
        assert all(beside) and len(beside) > 50
    finally:
        house.remove(job)
        proc.kill()
        proc.wait()
