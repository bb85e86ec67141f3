"""Hugging Face Spaces readiness: the README front matter, and a start that survives a model it
cannot load."""

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from gradio_client import Client

from engine.schema.specs import EMBEDDED

ROOT = Path(__file__).resolve().parent.parent


def test_readme_front_matter_is_a_space_config():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "README must start with YAML front matter"
    meta = yaml.safe_load(match.group(1))
    for key in ("title", "emoji", "sdk", "sdk_version", "app_file", "short_description"):
        assert meta.get(key), key
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert len(meta["short_description"]) <= 60
    pinned = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert meta["sdk_version"] == pinned


def test_gpu_decorator_is_a_no_op_without_spaces():
    from ui.gpu import on_gpu, spaces

    def work(x):
        return x + 1
    assert spaces is None and on_gpu(work) is work


@pytest.mark.slow
def test_unavailable_model_falls_back_to_the_embedded_one(output_dir):
    port = 7900 + os.getpid() % 90
    env = {**os.environ, "TBT_MODELS": "no-such-org/no-such-model-xyz,embedded", "HF_HUB_OFFLINE": "1"}
    with open(output_dir / "fallback-server.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            up = False
            for _ in range(240):
                assert proc.poll() is None, "the app exited instead of falling back"
                try:
                    up = bool(urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=2).read())
                    break
                except OSError:
                    time.sleep(1)
            assert up, "the app did not start"
            # the page is up before the model loads; the notice comes with the model (the page's
            # header shows it then, and /status says it)
            status = Client(f"http://127.0.0.1:{port}/", verbose=False).predict(api_name="/status")
            assert status["default"] == EMBEDDED and "no-such-org/no-such-model-xyz" not in status["models"]
            page = status["notice"]
            assert "could not be loaded" in page and "falls back to the embedded" in page
            assert "no-such-org/no-such-model-xyz" in page
            # the loader's own words (paths, URLs, exception names) stay in the server log
            ref = re.search(r"reference ([0-9a-f]{8})", page)
            assert ref, page[:2000]
            for internal in ("Error", "http", "/root", ".cache", "Traceback"):
                notice = page[page.index("could not be loaded"):page.index("falls back")]
                assert internal not in notice, (internal, notice)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert ref.group(1) in (output_dir / "fallback-server.log").read_text()


def test_zerogpu_durations_follow_the_request(monkeypatch):
    """On ZeroGPU every GPU function gets a duration from its own arguments (the default 60 s
    would kill a long run, the lab or the evaluation)."""
    import types
    from ui import gpu
    granted = []

    def GPU(fn=None, duration=None):
        if fn is not None:                            # used bare: the 60 s default
            granted.append(None)
            return fn

        def wrap(f):
            def call(*args, **kwargs):
                granted.append(duration(*args, **kwargs) if callable(duration) else duration)
                return f(*args, **kwargs)
            return call
        return wrap
    monkeypatch.setattr(gpu, "spaces", types.SimpleNamespace(GPU=GPU))

    def run(prompt, max_new_tokens, *rest):
        return prompt
    assert gpu.on_gpu(run, gpu.for_tokens(1))("hi", 1000) == "hi"
    assert gpu.on_gpu(run, gpu.for_tokens((1, 2)))("hi", 256, 64)
    assert gpu.on_gpu(run, 600)("hi", 1)
    assert granted == [gpu.BASE_SECONDS + 250, gpu.BASE_SECONDS + 80, 600]
    assert gpu.for_tokens(1)("hi", "not a number") > 60             # unknown: assume a long run
