"""The back room's child process (`python -m engine.host.job`, started by engine/host/backroom.call).

It lowers its own priority (CPU and disk), watches that the server is still there, reads one job
spec as a JSON line on stdin, runs it and writes JSON lines to its original stdout: progress, then
the result or the error. Library prints go to stderr (the server's log).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import signal
import sys
import threading
import time
import traceback

from engine.errors import EngineError
from engine.host.backroom import BackroomError

NOT_FINITE_SAID = 20        # the paths of non-finite figures a result names at most


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


def finite(value, path: str = "", found: list | None = None):
    """`value` with every NaN or infinity (which JSON cannot carry) as None, and their paths in
    `found` ("roofline.points[3].ms"): a measurement that divided by zero arrives, and says where."""
    if isinstance(value, float) and not math.isfinite(value):
        if found is not None:
            found.append(f"{path or 'result'} = {value}")
        return None
    if isinstance(value, dict):
        return {k: finite(v, f"{path}.{k}" if path else str(k), found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


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
            from engine.model.core import Engine
            from engine.schema.specs import EMBEDDED
            args.append(Engine.load(None if spec["model"] in ("embedded", EMBEDDED) else spec["model"]))
        result = fn(*args, progress=lambda f, t="": send({"progress": float(f), "text": str(t)}), cancel=cancel,
                    **spec["kwargs"])
        not_finite: list[str] = []
        result = finite(result, found=not_finite)
        send({"result": result, **({"not_finite": not_finite[:NOT_FINITE_SAID]} if not_finite else {})})
    except EngineError as exc:
        send({"error": str(exc), "visitor": not isinstance(exc, BackroomError), "key": exc.key,
              "values": exc.values})
    except BaseException as exc:                      # noqa: BLE001 -- reported to the parent, traceback to the log
        traceback.print_exc()
        send({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"})
    finally:
        out.close()


if __name__ == "__main__":
    main()
