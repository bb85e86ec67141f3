"""Limits no caller can step around, against a live app a host set up as a public Space would:
`TBT_LAB=recorded` (no heavy live work) and one trusted proxy in front (`TBT_TRUSTED_PROXIES=1`), and
a first model it cannot load (`TBT_MODELS=no-such-org/...,embedded`): a Space's start survives it, falling
back to the embedded model (the front matter and the GPU decorator are checked in tests/unit/test_spaces.py).
One server for both (they were two servers, each loading the model).

Heavy work is refused through the documented API (/serve) and through the page's own events sent
by a script (the evaluation, the load sweep): the page's hidden or shown buttons are not the gate.
A caller who writes X-Forwarded-For itself neither takes another address's slot nor steps out of
its own: only the entry the proxy appended counts."""

import os
import re

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from engine.schema.specs import EMBEDDED
from tests.servers import app_server, worker_name
from tests.waits import wait_until

SMALL = dict(requests=3, rate=0, prompt_tokens=48, shared_prefix=16, new_tokens=4, page_size=8, num_blocks=64,
             max_batch_tokens=64)
LONG = dict(prompt="Count from one to one thousand.", max_new_tokens=400)


MISSING = "no-such-org/no-such-model-xyz"
LOG = "space-server"          # its output: test-output/space-server.log


@pytest.fixture(scope="module")
def host_url():
    env = {**os.environ, "TBT_LAB": "recorded", "TBT_TRUSTED_PROXIES": "1", "TBT_COMPILE": "0",
           "TBT_CONCURRENCY": "4", "TBT_MODELS": f"{MISSING},embedded", "HF_HUB_OFFLINE": "1"}
    # the app must come up (ready() fails if it exits instead of falling back)
    with app_server(LOG, env) as (_, url):
        Client(url, verbose=False).predict(api_name="/status")      # answers once the model is loaded
        yield url


def test_unavailable_model_falls_back_to_the_embedded_one(host_url, output_dir):
    # the page is up before the model loads; the notice comes with the model (the page's header shows
    # it then, and /status says it)
    status = Client(host_url, verbose=False).predict(api_name="/status")
    assert status["default"] == EMBEDDED and MISSING not in status["models"]
    page = status["notice"]
    assert "could not be loaded" in page and "falls back to the embedded" in page
    assert MISSING in page
    # the loader's own words (paths, URLs, exception names) stay in the server log
    ref = re.search(r"reference ([0-9a-f]{8})", page)
    assert ref, page[:2000]
    notice = page[page.index("could not be loaded"):page.index("falls back")]
    for internal in ("Error", "http", "/root", ".cache", "Traceback"):
        assert internal not in notice, (internal, notice)
    assert ref.group(1) in (output_dir / f"{worker_name(LOG)}.log").read_text()


def page_event(client: Client, elem_id: str) -> int:
    """The fn_index of the page's click event on the component `elem_id`, opened to this client as a
    script would open it (the page's events are left out of the client's documented API)."""
    ids = [c["id"] for c in client.config["components"] if c.get("props", {}).get("elem_id") == elem_id]
    for index, endpoint in client.endpoints.items():
        dependency = client.config["dependencies"][index] if index < len(client.config["dependencies"]) else {}
        if any(target[0] in ids for target in dependency.get("targets", [])):
            endpoint.is_valid = True
            return index
    raise AssertionError(f"no event on #{elem_id}")


@pytest.mark.parametrize("lang, words", [("en", "does not run live"), ("zh", "录制的结果")])
def test_serve_obeys_the_host_s_lab_mode(host_url, lang, words):
    caller = Client(host_url, verbose=False, headers={"Accept-Language": lang})
    with pytest.raises(AppError) as caught:
        caller.predict(**SMALL, api_name="/serve")
    assert words in str(caught.value)
    assert not caller.predict(api_name="/status")["house"]["jobs"]          # nothing started


@pytest.mark.parametrize("button, data", [("r-eval", ([0, 64], 2, EMBEDDED)),
                                          ("load-sweep", ("", "Hi", True))])
def test_the_page_s_heavy_events_sent_by_a_script_are_refused(host_url, button, data):
    caller = Client(host_url, verbose=False)
    with pytest.raises(AppError) as caught:
        caller.predict(*data, fn_index=page_event(caller, button))
    assert "does not run live" in str(caught.value)
    assert not caller.predict(api_name="/status")["house"]["jobs"]


def test_a_caller_who_forges_the_forwarded_address_keeps_one_slot(host_url):
    """The proxy appended 203.0.113.7; what the caller wrote to the left of it changes every call."""
    first = Client(host_url, verbose=False, headers={"x-forwarded-for": "1.1.1.1, 203.0.113.7"})
    job = first.submit(**LONG, api_name="/trace")
    try:
        wait_until(lambda: first.predict(api_name="/status")["active_runs"] >= 1, 120, "the first run")
        forged = Client(host_url, verbose=False, headers={"x-forwarded-for": "2.2.2.2, 203.0.113.7"})
        with pytest.raises(AppError, match="one run at a time per client"):
            forged.predict(prompt="Hi", max_new_tokens=2, api_name="/trace")
        # another address (the entry the proxy appended) is another client, whatever it forges
        other = Client(host_url, verbose=False, headers={"x-forwarded-for": "203.0.113.7, 198.51.100.9"})
        assert other.predict(prompt="Hi", max_new_tokens=2, api_name="/trace")
    finally:
        job.cancel()
