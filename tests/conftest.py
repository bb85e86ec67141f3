"""Shared fixtures: the real embedded model, loaded once per test session."""

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.browser.controls import FRAME_LOOPS_JS, first_draw  # noqa: E402
from tests.paths import OUTPUT  # noqa: E402
from tests.servers import WORKER, free_port, launch, launch_app, ready  # noqa: E402
# Tests never reach a model hub: fail fast instead of retrying a network that is not there.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The apps started here, the session's included, do not build their compiled decode step (a back-room
# job of minutes and ~4 GB of disk writes, which tests would otherwise wait for or race with):
# tests/tiny/test_fast.py builds it once (the tiny llama's), in-process, or finds it on disk, and loads it
# the app's way.
os.environ.setdefault("TBT_COMPILE", "0")


@pytest.fixture(scope="session")
def engine():
    from engine import Engine
    return Engine.load()


@pytest.fixture(scope="session")
def output_dir() -> Path:
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT


def pytest_report_header(config):
    """Which kernels and how many threads computed this run's floats (`make numerics` varies both)."""
    import torch
    return (f"torch {torch.__version__}: ATen CPU kernels {torch.backends.cpu.get_cpu_capability()}, "
            f"{torch.get_num_threads()} thread(s)")


SERVER: dict = {}     # the session's servers: their processes and urls (session_servers, below)


def served_endpoint(url: str) -> dict:
    """The llama.cpp server as the app's host lists it: the embedded model's tokenizer maps its
    token texts to ids; repeat_penalty 1.0 makes its temperature 0 plain greedy."""
    return {"name": "llama.cpp", "url": url, "model": "smollm2", "api": "completions", "tokenizer": "embedded",
            "extra": {"repeat_penalty": 1.0}}


def session_servers() -> dict:
    """Start llama-cpp-python's server and the session's app without waiting for either: called when the
    collection holds a test that needs them (pytest_collection_finish, below), so that their start goes
    on while the unit and tiny tiers run. The fixtures below wait for them to answer."""
    if not SERVER:
        from engine.model.loading import embedded_gguf
        port = free_port()
        SERVER["llama_url"] = url = f"http://127.0.0.1:{port}"
        SERVER["llama"] = launch(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf()), "--host", "127.0.0.1",
             "--port", str(port), "--n_threads", "2", "--n_ctx", "2048", "--model_alias", "smollm2",
             # queue concurrent requests (by default a new request cuts off the running one)
             "--interrupt_requests", "False"], "llama-server")
        env = {**os.environ, "TBT_COMPILE": "0", "TBT_CONCURRENCY": "4",
               "TBT_ENDPOINTS": json.dumps([served_endpoint(url)])}
        SERVER["app"], SERVER["app_url"] = launch_app("app-server", env)
    return SERVER


def pytest_collection_finish(session):
    if not session.config.option.collectonly and any("app_url" in item.fixturenames for item in session.items):
        session_servers()


@pytest.fixture(scope="session")
def llama_server():
    """llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) on the embedded
    GGUF, on a free local port: a real serving engine for the served-model tests. make test
    installs llama-cpp-python (built from source once, then from pip's cache)."""
    servers = session_servers()
    with ready(servers["llama"], servers["llama_url"] + "/v1/models", "llama-server", 120):
        yield servers["llama_url"]


@pytest.fixture(scope="session")
def app_url(llama_server):
    """The real app (`python app.py`) on a free local port, for gradio_client and the browser; it
    offers llama-cpp-python's server (above) as a served model, as a host would with TBT_ENDPOINTS."""
    servers = session_servers()
    with ready(servers["app"], servers["app_url"], "app-server", 240):
        yield servers["app_url"]


@pytest.fixture(scope="session")
def client(app_url):
    """A gradio_client Client of the session's app. gradio_client gives the POST that joins the queue
    5 s; once, in a clean-clone `make test` (the app then built its compiled step beside the tests, ~4 GB
    of disk writes), that POST took longer (the run itself went through). 60 s: a stall, not a hang."""
    from gradio_client import Client
    return Client(app_url, verbose=False, httpx_kwargs={"timeout": 60})


@pytest.fixture(scope="session")
def app_process(app_url):
    """The live app's process (psutil), to read its memory."""
    import psutil
    return psutil.Process(SERVER["app"].pid)


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, driven by Playwright (never `playwright install`: no downloads here)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture()
def page(browser, app_url):
    """A fresh tab on the app (1400×1000, downloads on); dialogs are recorded in page.dialogs."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.add_init_script(FRAME_LOOPS_JS)      # frame_loops() can count the page's animation loops
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(app_url)
        page.wait_for_selector("#prompt textarea", timeout=60_000)
        # the page's first draw (the recording, in the page's language) is done: a test's own upload
        # or run cannot be overwritten by it
        first_draw(page, timeout_ms=60_000)
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module")
def shots(output_dir):
    """Where browser tests save their screenshots."""
    folder = output_dir / "browser"
    folder.mkdir(exist_ok=True)
    return folder


# Each folder of tests/ is a kind, and its marker (pytest.ini says what each holds): `pytest -m unit`,
# `-m "(unit or tiny) and not slow"` (make quick). A test outside them, or asking for a fixture of a heavier kind
# (a unit test loading the model, an engine test starting the app), stops the collection.
FORBIDDEN = {
    "unit": {"engine", "app_url", "app_process", "llama_server", "browser", "page", "tiny_model", "tiny_engine"},
    "tiny": {"engine", "app_url", "app_process", "llama_server", "browser", "page"},
    "engine": {"app_url", "app_process", "llama_server", "browser", "page"},
    "app": {"browser", "page"},
    "browser": set(),
}
KINDS = tuple(FORBIDDEN)


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).resolve().parent
    misplaced, kinds = [], {}
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(tests).parts
        kind = parts[0] if len(parts) > 1 else None
        if kind not in KINDS:
            misplaced.append(f"{item.nodeid}: not in a kind's folder (tests/{{{','.join(KINDS)}}}/)")
            continue
        item.add_marker(kind)
        kinds[item.path] = kind
        if wrong := FORBIDDEN[kind] & set(item.fixturenames):
            misplaced.append(f"{item.nodeid}: a {kind} test asks for {', '.join(sorted(wrong))}")
    if misplaced:
        raise pytest.UsageError("tests in the wrong folder:\n  " + "\n  ".join(misplaced))
    if WORKER:
        items[:] = mixed(items, kinds)


def mixed(items: list, kinds: dict) -> list:
    """`make test`'s order for its xdist workers (`--dist loadfile --no-loadscope-reorder`: each worker
    takes the next file in this order when it is free). The light tiers first (unit, tiny) while the
    servers start; then two files that drive a server (app, browser: mostly waiting on it) for each
    file of the engine tier (the model in the worker's own process), so that the two workers mostly
    run one of each instead of two that want the same thing. Every worker collects the same order."""
    files: dict = {}          # {file: its items}, files in collection order
    for item in items:
        files.setdefault(item.path, []).append(item)
    first = [f for f in files if kinds[f] in ("unit", "tiny")]
    served = [f for f in files if kinds[f] in ("app", "browser")]
    local = [f for f in files if kinds[f] == "engine"]
    order = list(first)
    while served or local:
        order += served[:2] + local[:1]
        served, local = served[2:], local[1:]
    return [item for name in order for item in files[name]]
