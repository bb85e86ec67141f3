"""The back room: the house's heavy work in a child process that stands still while visitors run.

    call(kind, what, target, kwargs, model=..., progress=..., cancel=...) -> the target's result

`target` ("module:function") runs in a fresh `python -m engine.backroom` process at the lowest
priority the kernel has (nice 19 and SCHED_IDLE: it gets a core only when nothing else wants it),
in a process group of its own, registered with engine/house.HOUSE: the moment a visitor's run
begins, the whole group is stopped (SIGSTOP, a compiler's gcc included) and continued when the last
run ends. Its clocks (engine/clock.py) leave the pauses out.

With `model`, the child loads its own engine on that model ("embedded" for the built-in one) and
passes it first. The function gets `progress(fraction, text)` and a `cancel` event (set by SIGTERM,
which `call` sends when the caller's `cancel` is set) and returns something JSON can carry; an
EngineError in the child is raised again here as an EngineError with its message. The result, if a
dict, gains "backroom": how often the job stood still, for how long, and how many visitor runs
began while it ran.

No torch in the parent's half of this module.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from .errors import EngineError
from .house import HOUSE

ROOT = Path(__file__).resolve().parent.parent
_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()


class BackroomError(EngineError):
    """The child failed in a way that is not the visitor's doing (the log has its traceback)."""


def call(kind: str, what: str, target: str, kwargs: dict | None = None, model: str | None = None,
         progress=None, cancel: threading.Event | None = None):
    spec = {"target": target, "kwargs": kwargs or {}, "model": model}
    env = dict(os.environ, TBT_PAUSE_LEDGER=HOUSE.ledger.path, PYTHONUNBUFFERED="1")
    # libgomp's defaults (spin ~3 ms, then sleep): only the job's main thread runs torch, so its
    # pool needs no more (the server's ACTIVE policy would spin for minutes after each region)
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "engine.backroom"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, process_group=0, text=True, encoding="utf-8")
    with _children_lock:
        _children.add(proc)
    lines: queue.Queue = queue.Queue()
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
                try:
                    line = lines.get(timeout=0.25)
                except queue.Empty:
                    continue
                if line is None:                       # the child closed its end: done or dead
                    break
                message = json.loads(line)
                if "progress" in message:
                    if progress is not None:
                        progress(message["progress"], message.get("text", ""))
                else:
                    answer = message
            proc.wait()
            stood = {"pauses": job.pauses, "visitor_runs_between": job.runs_between,
                     "paused_s": round((HOUSE.ledger.paused_ns() - paused_before) / 1e9, 2)}
    finally:
        if proc.poll() is None:                        # the caller went away (or an error here)
            _signal(proc, signal.SIGKILL)
            proc.wait()
        with _children_lock:
            _children.discard(proc)
    if "result" in answer:
        result = answer["result"]
        if isinstance(result, dict):
            result["backroom"] = stood
        return result
    if "error" in answer:
        raise (EngineError if answer.get("visitor") else BackroomError)(answer["error"])
    raise BackroomError(f"the {kind} job ended without an answer (exit status {proc.returncode}); see the log")


def _read(stream, lines: queue.Queue) -> None:
    for line in stream:
        if line.strip():
            lines.put(line)
    lines.put(None)


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


# --- the child's half -------------------------------------------------------------------------------
def _lowest_priority() -> None:
    """CPU and disk: a build writes ~4 GB (C++ objects, the 0.66 GB package) on a fresh machine."""
    try:
        os.nice(19)
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError, PermissionError):
        pass
    try:
        import psutil
        psutil.Process().ionice(psutil.IOPRIO_CLASS_IDLE)
    except (ImportError, AttributeError, OSError, ValueError):
        pass


def _watch_parent(parent: int) -> None:
    """End the job if the server has gone (a stopped job is ended by the kernel's SIGHUP instead)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(3)


def main() -> None:
    parent = os.getppid()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)                                   # prints from libraries go to the server's log
    _lowest_priority()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    write_lock = threading.Lock()

    def send(message: dict) -> None:
        with write_lock:
            out.write(json.dumps(message, allow_nan=False) + "\n")

    try:
        spec = json.loads(sys.stdin.readline())
        module, name = spec["target"].split(":")
        fn = getattr(importlib.import_module(module), name)
        args = []
        if spec.get("model"):
            from .core import Engine
            from .specs import EMBEDDED
            args.append(Engine.load(None if spec["model"] in ("embedded", EMBEDDED) else spec["model"]))
        result = fn(*args, progress=lambda f, t="": send({"progress": float(f), "text": str(t)}), cancel=cancel,
                    **spec["kwargs"])
        send({"result": result})
    except EngineError as exc:
        send({"error": str(exc), "visitor": not isinstance(exc, BackroomError)})
    except BaseException as exc:                      # noqa: BLE001 -- reported to the parent, traceback to the log
        traceback.print_exc()
        send({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"})
    finally:
        out.close()


if __name__ == "__main__":
    main()
