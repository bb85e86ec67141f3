"""The back room: the house's heavy work in a child process that stands still while visitors run.

    call(kind, what, target, kwargs, model=..., progress=..., cancel=...) -> the target's result

`target` ("module:function") runs in a fresh `python -m engine.host.job` process (engine/host/job.py) at the lowest
priority the kernel has (nice 19 and SCHED_IDLE: it gets a core only when nothing else wants it),
in a process group of its own, registered with engine/house.HOUSE: the moment a visitor's run
begins, the whole group is stopped (SIGSTOP, a compiler's gcc included) and continued when the last
run ends. Its clocks (engine/model/clock.py) leave the pauses out.

With `model`, the child loads its own engine on that model ("embedded" for the built-in one) and
passes it first. The function gets `progress(fraction, text)` and a `cancel` event (set by SIGTERM,
which `call` sends when the caller's `cancel` is set) and returns something JSON can carry; an
EngineError in the child is raised again here as an EngineError with its message. The result, if a
dict, gains "backroom": how often the job stood still, for how long, and how many visitor runs
began while it ran; and "not_finite" if any of its figures was NaN or infinite (None in their place:
JSON carries neither), naming each.

No torch here: the child's half is engine/host/job.py.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from engine import environment
from engine.errors import EngineError
from engine.host.house import HOUSE

CHILD_EXIT_S = 30.0    # a child that closed its output (or was killed) is waited for this long
LINES_KEPT = 1024      # the child's lines read and not yet handled (progress, then one answer)
ROOT = Path(__file__).resolve().parents[2]     # the repository: `python -m engine.host.job` runs there
log = logging.getLogger(__name__)
_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()


class BackroomError(EngineError):
    """The child failed in a way that is not the visitor's doing (the log has its traceback)."""


def call(kind: str, what: str, target: str, kwargs: dict | None = None, model: str | None = None,
         progress=None, cancel: threading.Event | None = None, deadline_s: float | None = None):
    """The job's result; past `deadline_s` of wall time (TBT_BACKROOM_DEADLINE_S unless given) the
    child is ended and an EngineError tells the visitor (its turns make that rare: house.py)."""
    deadline = time.monotonic() + (environment.backroom_deadline_s() if deadline_s is None else deadline_s)
    spec = {"target": target, "kwargs": kwargs or {}, "model": model}
    env = dict(os.environ, TBT_PAUSE_LEDGER=HOUSE.ledger.path, PYTHONUNBUFFERED="1")
    # libgomp's defaults (spin ~3 ms, then sleep): only the job's main thread runs torch, so its
    # pool needs no more (the server's ACTIVE policy would spin for minutes after each region)
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "engine.host.job"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, process_group=0, text=True, encoding="utf-8")
    with _children_lock:
        _children.add(proc)
    lines: queue.Queue = queue.Queue(maxsize=LINES_KEPT)   # full: the reader (and the child's pipe) waits
    reader = threading.Thread(target=_read, args=(proc.stdout, lines), daemon=True, name="tbt-backroom-read")
    reader.start()
    paused_before = HOUSE.ledger.paused_ns()
    answer: dict = {}
    try:
        with HOUSE.job(kind, what, pgid=proc.pid) as job:
            proc.stdin.write(json.dumps(spec) + "\n")
            proc.stdin.close()
            asked_to_stop = False
            while True:
                if cancel is not None and cancel.is_set() and not asked_to_stop:
                    asked_to_stop = True
                    _signal(proc, signal.SIGTERM)     # delivered when it next runs; it returns what it has
                if time.monotonic() > deadline:        # the finally below ends the child
                    raise past_deadline(kind, time.monotonic() - job.started,
                                        (HOUSE.ledger.paused_ns() - paused_before) / 1e9)
                try:
                    line = lines.get(timeout=0.25)
                except queue.Empty:
                    continue
                if line is None:                       # the child closed its end: done or dead
                    break
                message = said(line)
                if message is None:
                    continue
                if "progress" in message:
                    if progress is not None:
                        progress(message["progress"], message.get("text", ""))
                else:
                    answer = message
            try:
                proc.wait(timeout=CHILD_EXIT_S)        # it closed its end: it is exiting (else: killed below)
            except subprocess.TimeoutExpired:
                pass
            stood = {"pauses": job.pauses, "visitor_runs_between": job.runs_between,
                     "paused_s": round((HOUSE.ledger.paused_ns() - paused_before) / 1e9, 2)}
    finally:
        if proc.poll() is None:                        # the caller went away (or an error here)
            _signal(proc, signal.SIGKILL)
            try:
                proc.wait(timeout=CHILD_EXIT_S)
            except subprocess.TimeoutExpired:          # not reaped yet: atexit's sweep tries again
                pass
        with _children_lock:
            _children.discard(proc)
    if "result" in answer:
        result = answer["result"]
        if isinstance(result, dict):
            result["backroom"] = stood
            if answer.get("not_finite"):        # figures that were NaN or infinite: None in the result, named here
                result["not_finite"] = answer["not_finite"]
                log.warning("the %s job's result held figures that are not numbers: %s", kind, answer["not_finite"])
        return result
    if "error" in answer:
        raise (EngineError if answer.get("visitor") else BackroomError)(answer["error"], answer.get("key"),
                                                                         **answer.get("values", {}))
    raise BackroomError(f"the {kind} job ended without an answer (exit status {proc.returncode}); see the log")


def past_deadline(kind: str, wall_s: float, stood_s: float) -> EngineError:
    """The job ran out of wall time: blamed on other visitors' runs only when it stood still for them
    half of that time or more; else it is said to be the job's own length."""
    minutes, stood = max(1, round(wall_s / 60)), round(stood_s / 60, 1)
    if stood_s >= wall_s / 2:
        return EngineError(f"the {kind} job did not finish within {minutes} minutes on this busy server "
                           f"(it stood still {stood} minutes for other visitors' runs); try again later",
                           "backroom_deadline", minutes=minutes, stood=stood)
    return EngineError(f"the {kind} job did not finish within {minutes} minutes, most of them its own work "
                       f"(it stood still {stood} minutes for other visitors' runs)", "backroom_deadline_own",
                       minutes=minutes, stood=stood)


def said(line: str) -> dict | None:
    """A line of the child's protocol (a JSON object), or None for anything else it wrote to its
    stdout (a library's stray print before the child moved it to stderr), which is logged and skipped."""
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        log.warning("the back-room child wrote a line outside its protocol, skipped: %r", line[:200])
        return None
    return message


def _read(stream, lines: queue.Queue) -> None:
    """The child's lines into `lines`; a reader whose caller has gone (nobody takes them) gives up."""
    try:
        for line in stream:
            if line.strip():
                lines.put(line, timeout=CHILD_EXIT_S)
        lines.put(None, timeout=CHILD_EXIT_S)
    except queue.Full:
        pass


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)       # a stopped job acts on SIGTERM when it is continued
    except (ProcessLookupError, PermissionError):
        pass


@atexit.register
def _end_children() -> None:
    """The server is going: its jobs go with it (a stopped group would wait forever)."""
    with _children_lock:
        for proc in list(_children):
            _signal(proc, signal.SIGKILL)
