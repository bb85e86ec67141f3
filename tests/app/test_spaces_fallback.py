"""Hugging Face Spaces readiness: a start that survives a model it cannot load (the front matter
and the GPU decorator are checked in tests/unit/test_spaces.py)."""

import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest
from gradio_client import Client

from engine.schema.specs import EMBEDDED
from tests.paths import ROOT


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
