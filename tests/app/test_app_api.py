"""The app through gradio_client against a live local server: the documented /trace endpoint."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from gradio_client import Client

from engine import Settings, Trace, run_trace
from tests import numerics
from tests.load import differences
from tests.waits import wait_until
from engine.schema.validate import validate
from engine.model.lens import exported

ARGS = dict(max_new_tokens=12, temperature=0.0, top_k=0, top_p=1.0, seed=0, attention=False,
            logit_lens=False, chat_template=True)


def call_trace(client, prompt: str, **overrides) -> Trace:
    path = client.predict(prompt=prompt, **{**ARGS, **overrides}, api_name="/trace")
    with open(path, encoding="utf-8") as f:
        return Trace.from_json(f.read())


def test_trace_endpoint_matches_the_engine(client, engine):
    got = call_trace(client, "什么是量子计算", attention=True)
    mine = run_trace(engine, "什么是量子计算", Settings(max_new_tokens=12, attention=True))
    assert [t.id for t in got.prompt.tokens] == [t.id for t in mine.prompt.tokens]
    ours, theirs = [s.id for s in got.steps], [s.id for s in mine.steps]     # the server's threads may sum otherwise
    numerics.assert_same_greedy(ours, theirs, numerics.margins(mine.steps))
    assert got.attention is not None and len(got.attention.steps) == len(got.steps)


def test_trace_with_only_a_prompt_uses_the_documented_defaults(client, engine):
    path = client.predict(prompt="Hello, world!", api_name="/trace")
    with open(path, encoding="utf-8") as f:
        got = Trace.from_json(f.read())
    assert got.settings == Settings(max_new_tokens=got.settings.max_new_tokens)   # every other default
    assert got.settings.max_new_tokens == Settings().max_new_tokens
    mine = run_trace(engine, "Hello, world!", Settings())
    ours, theirs = [s.id for s in got.steps], [s.id for s in mine.steps]
    numerics.assert_same_greedy(ours, theirs, numerics.margins(mine.steps))


def test_compare_with_only_a_prompt(client):
    """The defaults are the page's and the recordings' (engine.run.request.SIDE_BY_SIDE)."""
    from engine.run.request import SIDE_BY_SIDE
    normal, reasoning = client.predict(prompt="What is 2 + 3?", api_name="/compare")
    with open(normal, encoding="utf-8") as f:
        assert Trace.from_json(f.read()).settings.max_new_tokens == SIDE_BY_SIDE.answer_tokens
    with open(reasoning, encoding="utf-8") as f:
        assert Trace.from_json(f.read()).settings.thinking_budget == SIDE_BY_SIDE.thinking_budget


def test_four_clients_at_once_each_get_their_own_trace(app_url, engine):
    """Capture on (attention and logit lens): hook or capture state shared between visitors would
    put one visitor's rows or guesses into another's trace. Two of the four sample."""
    runs = {"Hello, world!": dict(temperature=0.0, seed=0),
            "什么是量子计算": dict(temperature=0.8, seed=11),
            "Write a haiku about rain.": dict(temperature=0.0, seed=0),
            "List three fruits.": dict(temperature=0.8, seed=12)}
    capture = dict(max_new_tokens=12, top_k=40, attention=True, logit_lens=True)
    # the API's file carries the lens computed at export (engine/model/lens.py), as this reference does
    expected = {p: exported(engine, run_trace(engine, p, Settings(**capture, **o))) for p, o in runs.items()}

    def one(prompt):
        return prompt, call_trace(Client(app_url, verbose=False), prompt, **capture, **runs[prompt])

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, runs))
    for prompt, trace in results:
        assert trace.prompt.raw == prompt
        assert trace.attention is not None and len(trace.attention.steps) == len(trace.steps) > 0
        assert all(s.lens is not None and len(s.lens) == engine.info.layers for s in trace.steps)
        assert differences(trace, expected[prompt]) == [], prompt


@pytest.mark.parametrize("prompt, overrides, message", [
    ("", {}, "empty"),
    # out-of-range values are refused by the engine, naming the setting and its range
    ("Hello", {"temperature": -1.0}, r"temperature must be in \[0, 100\]"),
    ("Hello", {"top_p": 0.0}, r"top_p must be in \(0, 1\]"),
    ("Hello", {"max_new_tokens": 0}, r"max_new_tokens must be in \[1, 1024\]"),
    ("x" * 20_001, {}, "limit is 20,000"),
])
def test_bad_input_gets_a_clear_message(client, prompt, overrides, message):
    with pytest.raises(Exception, match=message):
        call_trace(client, prompt, **overrides)
    assert call_trace(client, "Hi").steps      # the server keeps serving


def test_compare_endpoint_returns_both_traces(client):
    normal_path, reasoning_path = client.predict(prompt="What is 17 + 25?", thinking_budget=16,
                                                 answer_tokens=16, api_name="/compare")
    normal = Trace.from_json(open(normal_path, encoding="utf-8").read())
    reasoning = Trace.from_json(open(reasoning_path, encoding="utf-8").read())
    assert normal.reasoning is None and reasoning.reasoning == "scaffold"
    assert reasoning.summary.thinking_tokens >= 16
    assert reasoning.summary.time_to_first_answer_ms > normal.summary.ttft_ms


def test_a_cancelled_trace_call_stops_its_run(client):
    """A script that goes away does not keep a run slot: its run stops within about a step."""
    job = client.submit(prompt="Count from one to one thousand, one number per line.", max_new_tokens=1000,
                        api_name="/trace")
    wait_until(lambda: len(job.outputs()) >= 3, 60, "the run's first steps streamed")     # a few steps in
    job.cancel()
    wait_until(lambda: client.predict(api_name="/status")["active_runs"] == 0, 10,
               "the run to stop after its caller cancelled", every_s=0.1)


def test_every_press_of_a_stop_button_is_sent(client):
    """Each Stop's click goes out on every press, outside the queue: with Gradio's default trigger
    mode ("once") a press waits for the previous press's answer, and a first press whose request hung
    (Chromium on a loaded box, tests/browser/controls.press_answered) swallowed every later one."""
    stops = {c["id"]: c["props"]["elem_id"] for c in client.config["components"]
             if c.get("props", {}).get("elem_id") in ("stop", "r-stop", "lab-stop", "floor-stop")}
    clicks = [d for d in client.config["dependencies"] if any(t[0] in stops and t[1] == "click" for t in d["targets"])]
    assert {stops[t[0]] for d in clicks for t in d["targets"]} == set(stops.values()) and len(stops) == 4
    assert all(d["trigger_mode"] == "multiple" and d["queue"] is False for d in clicks), clicks


def test_a_script_flooding_trace_does_not_keep_another_client_waiting(app_url, client):
    """One client, one run: a flood from one session is refused beyond its first call, so the
    engine's other slot stays free and another client's run starts at once: it is done while the
    flood's run (400 tokens, begun before it) is still going, not after it."""
    flood = Client(app_url, verbose=False)
    jobs = [flood.submit(prompt="Count from one to one thousand.", max_new_tokens=400, api_name="/trace")
            for _ in range(6)]
    wait_until(lambda: client.predict(api_name="/status")["active_runs"] >= 1, 60, "the flood's first run")
    path = client.predict(prompt="Hello", max_new_tokens=4, api_name="/trace")
    assert path and any(not job.done() for job in jobs), [job.status().code for job in jobs]
    refused = 0
    for job in jobs:
        try:
            job.result(timeout=3)
        except Exception as exc:                      # refused at once, or still running (timeout)
            refused += "one run at a time per client" in str(exc)
        job.cancel()
    assert refused >= 4, refused


def test_fork_endpoint_continues_a_trace_on_its_cached_prefix(client, engine):
    """/trace, then /fork of its result at step 3 with the second candidate: the branch reuses the
    server's kept cache (no rebuild), equals the engine's own fork, and the recompute is timed."""
    from gradio_client import handle_file

    from engine.run.fork import run_fork
    path = client.predict(prompt="Xiao Ming went to the supermarket and bought some apples. Then he",
                          **ARGS, api_name="/trace")
    with open(path, encoding="utf-8") as f:
        run = Trace.from_json(f.read())
    token = next(c.id for c in run.steps[3].candidates if c.id != run.steps[3].id)
    forked_path = client.predict(trace=handle_file(path), step=3, token=token, max_new_tokens=6, recompute=True,
                                 api_name="/fork")
    with open(forked_path, encoding="utf-8") as f:
        forked = validate(Trace.from_json(f.read()))
    branch = forked.branches[-1]
    assert branch.at == 3 and branch.token == token and branch.rebuilt_ms is None
    # the recompute (no cache) and the branch (its cache) choose alike but at a tie (tests/numerics.py)
    assert branch.recompute_ms is not None and (branch.recompute_token == branch.steps[1].id
                                                or numerics.margins(branch.steps)[1] < numerics.TIE)
    mine = run_fork(engine, run, 3, token, max_new_tokens=6).branches[-1]
    ours, theirs = [s.id for s in branch.steps], [s.id for s in mine.steps]
    numerics.assert_same_greedy(ours, theirs, numerics.margins(mine.steps))
    stored = {c.id for c in run.steps[3].candidates}
    outside = next(i for i in range(1000, 40_000) if i not in stored)
    with pytest.raises(Exception, match="candidates"):
        client.predict(trace=handle_file(path), step=3, token=outside, api_name="/fork")


def test_the_documented_endpoints_keep_their_names(client):
    """A page event whose function shares an endpoint's name would push gr.api's to "/fork_1"."""
    named = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert set(named) == {"/trace", "/compare", "/fork", "/read_trace", "/status", "/profile", "/serve", "/export"}


def test_the_session_app_runs_without_its_compiled_step(client):
    """The tests' apps run with TBT_COMPILE=0: the compiled step is built once in the suite, in-process
    (tests/tiny/test_fast.py, the tiny llama's, which also loads it the app's way and reads /status's
    "fast" then), so no app spends minutes and gigabytes of disk on a back-room build that other tests
    would wait for. /status says there is no step and no job, and a run decodes eagerly."""
    status = client.predict(api_name="/status")
    assert {"visitor_runs", "jobs", "turn"} <= set(status["house"]), status["house"]
    assert status["fast"] is None and all(j["kind"] != "compile" for j in status["house"]["jobs"]), status
    got = call_trace(client, "Name three colours.", max_new_tokens=4)
    assert (got.observation.decode, got.observation.static_cache_tokens) == ("eager", None)


def test_status_reports_what_the_process_holds_beside_its_caps(client):
    """/status carries the memory a host watches on a long-running Space: the process's resident size
    and the bytes the kept prefix caches pin, which never pass their cap."""
    client.predict("Hello", 8, 0.0, api_name="/trace")
    status = client.predict(api_name="/status")
    memory, limits = status["memory"], status["limits"]
    assert memory["rss_mb"] > 100, memory
    assert 0 < memory["prefix_cache_bytes"] <= limits["prefix_cache_bytes"], (memory, limits)
    assert {"malloc_trim", "trims", "trim_ms"} <= set(memory)
    # the sessions the page holds (this client's among them), those waiting out their grace, those dropped
    assert memory["sessions"] >= 1, memory
    assert all(isinstance(memory[k], int) for k in ("sessions", "sessions_leaving", "sessions_dropped")), memory
    assert status["runs_at_once"] >= 1           # with the per-run caps: what runs in flight may hold
