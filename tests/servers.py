"""Servers started for the tests and the load script: the app (`python app.py`) and llama.cpp's
server, each on a free local port, ready once a URL answers, its output in test-output/NAME.log,
and stopped at the end: in a finally, and by atexit for whatever an interrupted session left.
Only processes started here are ever ended, by their own ids (the server and the children it had
started, read just before it is stopped)."""

from __future__ import annotations

import atexit
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

from tests.paths import OUTPUT, ROOT

STARTED: dict[int, subprocess.Popen] = {}       # process id -> the server process, until it is stopped
# `make test` runs the suite in pytest-xdist workers (gw0, gw1, ...), each with its own servers:
# their logs, ports and shared-run folders carry the worker's name so that no two can meet.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def worker_name(name: str) -> str:
    """`name`, or `name`-gw1 in an xdist worker: a server's log and folders are its worker's own."""
    return f"{name}-{WORKER}" if WORKER else name


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now. In an xdist worker, from that worker's own range
    below the kernel's ephemeral ports (two workers' bind-to-0 ports could be the same one, picked
    between one's check and its server's start)."""
    if not WORKER:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    first = 12_000 + 2_000 * int(WORKER.removeprefix("gw"))
    for port in random.sample(range(first, first + 2_000), 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}..{first + 1999} for worker {WORKER}")


def app_command(port: int) -> list[str]:
    """The app as `make run` starts it, on 127.0.0.1:`port`."""
    return [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port)]


def wait_until_ready(proc: subprocess.Popen, ready_url: str, name: str, seconds: float, log: str) -> None:
    """Poll `ready_url` until it answers; raise if the process exits or `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited while starting (code {proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(ready_url, timeout=2).close()
            return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer {ready_url} in {seconds:.0f} s; see {log}")
        time.sleep(0.5)


def stop(proc: subprocess.Popen, timeout_s: float = 30) -> None:
    """Stop a server started here: SIGTERM, then SIGKILL after `timeout_s`; then any child it had
    started (the back room's job) that outlived it."""
    STARTED.pop(proc.pid, None)
    children = []
    if proc.poll() is None:
        try:
            import psutil
            children = psutil.Process(proc.pid).children(recursive=True)
        except Exception:                     # psutil missing, or the process just ended
            children = []
        proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)
    for child in children:                    # psutil checks the id still names the same process
        try:
            if child.is_running():
                child.kill()
        except Exception:
            pass


@atexit.register
def _stop_leftovers() -> None:
    for proc in list(STARTED.values()):
        stop(proc, timeout_s=10)


def launch(command: list[str], name: str, env: dict | None = None) -> subprocess.Popen:
    """Start `command` in the repository root, its output in test-output/`name`.log (not waited for).
    Its shared runs (an app's links) go to test-output/shared-runs, never the user's cache."""
    OUTPUT.mkdir(exist_ok=True)
    env = dict(os.environ if env is None else env)
    env.setdefault("TBT_SHARE_DIR", str(OUTPUT / worker_name("shared-runs")))
    with open(OUTPUT / f"{worker_name(name)}.log", "w") as log:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    STARTED[proc.pid] = proc
    return proc


@contextmanager
def ready(proc: subprocess.Popen, ready_url: str, name: str, seconds: float):
    """Yield `proc` once `ready_url` answers; stop it at the end, whatever happens."""
    try:
        wait_until_ready(proc, ready_url, name, seconds, f"test-output/{worker_name(name)}.log")
        yield proc
    finally:
        stop(proc)


def launch_app(name: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """The app (`python app.py`) on a free port of 127.0.0.1, started: (process, url of its page)."""
    port = free_port()
    return launch(app_command(port), name, env), f"http://127.0.0.1:{port}/"


@contextmanager
def app_server(name: str, env: dict | None = None, seconds: float = 240):
    """The app on a free port: yields (process, url) once its page answers, stops it at the end."""
    proc, url = launch_app(name, env)
    with ready(proc, url, name, seconds):
        yield proc, url
