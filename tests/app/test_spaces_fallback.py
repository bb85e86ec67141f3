"""Hugging Face Spaces readiness: a start that survives a model it cannot load (the front matter
and the GPU decorator are checked in tests/unit/test_spaces.py)."""

import os
import re

import pytest
from gradio_client import Client

from engine.schema.specs import EMBEDDED
from tests.servers import app_server


@pytest.mark.slow
def test_unavailable_model_falls_back_to_the_embedded_one(output_dir):
    env = {**os.environ, "TBT_MODELS": "no-such-org/no-such-model-xyz,embedded", "HF_HUB_OFFLINE": "1"}
    # the app must come up (ready() fails if it exits instead of falling back)
    with app_server("fallback-server", env, seconds=240) as (_, url):
        # the page is up before the model loads; the notice comes with the model (the page's
        # header shows it then, and /status says it)
        status = Client(url, verbose=False).predict(api_name="/status")
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
    assert ref.group(1) in (output_dir / "fallback-server.log").read_text()
