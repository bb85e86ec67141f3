"""Served models (engine/served): the streaming reader against hostile servers on a real socket,
each server's documented response format (tests/fixtures/served/), and the trace a stream makes."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.errors import InvalidRequest
from engine.served import Bounds, ServedError, endpoint, endpoints_from_env, stream_served
from engine.schema.trace import Settings, Trace
from engine.schema.validate import validate
from tests.waits import wait_until
from tests.paths import FIXTURES as SHARED

FIXTURES = SHARED / "served"
QUICK = Bounds(connect_s=2, stall_s=0.6, total_s=5, max_bytes=200_000, max_line=20_000, max_events=500)


def chunk(text: str, token: int, logprob: float, finish: str | None = None) -> str:
    """One vLLM /v1/completions stream event (return_tokens_as_token_ids): a token and an alternative."""
    logprobs = {"tokens": [f"token_id:{token}"], "token_logprobs": [logprob],
                "top_logprobs": [{f"token_id:{token}": logprob, "token_id:7": logprob - 2.0}]}
    return "data: " + json.dumps({"choices": [{"index": 0, "text": text, "logprobs": logprobs,
                                               "finish_reason": finish}]}) + "\n\n"


GOOD = [chunk(" Paris", 100, -0.1), chunk(" is", 101, -0.2), chunk(" lovely", 102, -0.3, "length"), "data: [DONE]\n\n"]


class Hostile(BaseHTTPRequestHandler):
    """A server whose behaviour is chosen by the request path's last part."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        kind = self.path.strip("/").split("/")[0]
        if kind.startswith("fixture-"):              # a server's documented stream, as recorded in the file
            self.send_fixture(FIXTURES / kind.removeprefix("fixture-"))
            return
        if kind == "unknown-model":
            self.send_json(404, {"error": {"message": f"The model `{body['model']}` does not exist."}})
            return
        if kind == "not-sse":
            self.send_json(200, {"choices": [{"text": "hello"}]})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        events = {
            "good": GOOD,
            "stall": [GOOD[0], "SLEEP"],
            "truncated": GOOD[:2],
            "malformed": [GOOD[0], "data: {not json\n\n"],
            "huge-line": [GOOD[0], "data: " + "x" * 50_000],
            "huge": [GOOD[0]] + [":" + "x" * 10_000 + "\n"] * 40,     # comments: bytes without tokens
            "too-many": GOOD[:2] * 4 + GOOD[2:],
            "no-logprobs": ["data: " + json.dumps({"choices": [{"text": " Paris", "finish_reason": None}]}) + "\n\n"],
            "error-mid-stream": [GOOD[0], "data: " + json.dumps({"error": {"message": "engine overloaded"}}) + "\n\n"],
            "trickle": [GOOD[0]] + ["TRICKLE"] * 40,
        }[kind]
        try:
            for event in events:
                if event == "SLEEP":
                    time.sleep(3)
                elif event == "TRICKLE":            # a byte every 0.2 s: never stalls, never ends
                    self.wfile.write(b":\n")
                    self.wfile.flush()
                    time.sleep(0.2)
                else:
                    self.wfile.write(event.encode())
                    self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send_fixture(self, path: Path):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson" if path.suffix == ".ndjson" else "text/event-stream")
        self.end_headers()
        for line in path.read_bytes().splitlines(keepends=True):     # a line at a time, as a server flushes
            self.wfile.write(line)
            self.wfile.flush()

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def hostile():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.bodies = []
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def run(where, prompt="The capital of France is", local=None, **settings):
    events = stream_served(where, prompt, Settings(**{"max_new_tokens": 3, **settings}), local=local)
    try:
        while True:
            next(events)
    except StopIteration as done:
        return done.value


def at(server, kind: str, **kwargs):
    host, port = server.server_address
    where = endpoint(f"http://{host}:{port}/{kind}", "test-model", **{"token_ids": True, **kwargs})
    return type(where)(**{**where.__dict__, "bounds": QUICK})


def test_a_good_stream_makes_a_valid_served_trace(hostile):
    trace = run(at(hostile, "good"), max_new_tokens=3)
    validate(trace)
    assert [(s.id, s.token) for s in trace.steps] == [(100, " Paris"), (101, " is"), (102, " lovely")]
    assert [c.id for c in trace.steps[0].candidates] == [100, 7] and trace.steps[0].chosen_rank == 0
    assert trace.steps[0].chosen_p_model == pytest.approx(0.9048, abs=1e-4) and trace.output_text == " Paris is lovely"
    assert trace.model.source == "served" and trace.served.chunks == 3 and len(trace.served.itl_ms) == 2
    s = trace.summary
    assert s.new_tokens == 3 and s.stop_reason == "max_tokens" and 0 < s.ttft_ms <= s.e2e_ms
    assert s.tpot_ms == pytest.approx((s.e2e_ms - s.ttft_ms) / 2)
    again = validate(Trace.from_json(trace.to_json()))
    assert again.served == trace.served
    body = hostile.bodies[-1]
    assert body["model"] == "test-model" and body["stream"] is True and body["logprobs"] >= 1
    assert body["return_tokens_as_token_ids"] is True and body["prompt"] == "The capital of France is"


@pytest.mark.parametrize("kind, message", [
    ("unknown-model", "HTTP 404: The model `test-model` does not exist"),
    ("not-sse", "did not stream"),
    ("stall", "stalled: nothing for 0.6 s"),
    ("truncated", "ended without a finish reason"),
    ("malformed", "not JSON"),
    ("huge-line", "line longer than 20,000 bytes"),
    ("huge", "more than 200,000 bytes"),
    ("too-many", "more than the 3 tokens asked for"),
    ("no-logprobs", "without logprobs"),
    ("error-mid-stream", "engine overloaded"),
    ("trickle", "longer than 5 s"),
])
def test_a_hostile_server_gets_a_clear_message_and_nothing_hangs(hostile, kind, message):
    start = time.monotonic()
    with pytest.raises(ServedError, match=message.replace("(", r"\(").replace("`", ".")):
        run(at(hostile, kind), max_new_tokens=3)
    assert time.monotonic() - start < 8


def test_an_unreachable_endpoint_is_said_at_once():
    where = endpoint("http://127.0.0.1:9", "m")           # the discard port: nothing listens
    with pytest.raises(ServedError, match="cannot reach"):
        run(type(where)(**{**where.__dict__, "bounds": QUICK}))


def test_endpoints_are_checked_and_come_only_from_the_host(monkeypatch):
    for url in ("file:///etc/passwd", "ftp://x", "http://", "http://user:pw@host:1"):
        with pytest.raises(InvalidRequest):
            endpoint(url, "m")
    with pytest.raises(InvalidRequest, match="unknown api"):
        endpoint("http://h:1", "m", api="grpc")
    monkeypatch.setenv("TBT_ENDPOINTS", json.dumps([{"name": "a", "url": "http://h:8000", "model": "m",
                                                     "api": "chat", "key_env": "K"}]))
    monkeypatch.setenv("K", "secret")
    (only,) = endpoints_from_env()
    assert only.name == "a" and only.api == "chat" and only.headers() == {"Authorization": "Bearer secret"}
    monkeypatch.setenv("TBT_ENDPOINTS", "{oops")
    with pytest.raises(InvalidRequest, match="TBT_ENDPOINTS"):
        endpoints_from_env()


# Each server's documented stream (tests/fixtures/served/NOTES.md has the sources): the ids, texts,
# logprobs and the end as the parser must read them, through the same reader as a live server.
PARIS = ([12366, 374, 279, 6864, 13], " Paris is the capital.", "max_tokens")
FIXTURE_CASES = {
    "vllm_completions.sse": ("completions", {"token_ids": True}, *PARIS),
    "llamacpp_completion.sse": ("llamacpp", {}, *PARIS),
    "sglang_generate.sse": ("sglang", {}, *PARIS),
    "tgi_generate_stream.sse": ("tgi", {}, *PARIS),
    "openai_chat_llamacpp.sse": ("chat", {}, [791, 6864, 315, 9822, 374, 12366, 13], "The capital of France is Paris.",
                                 "eos"),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_CASES))
def test_each_servers_documented_stream_becomes_the_same_trace(hostile, name):
    api, options, ids, text, stop = FIXTURE_CASES[name]
    where = at(hostile, f"fixture-{name}", **{"token_ids": False, **options, "api": api})
    trace = run(where, max_new_tokens=len(ids))
    assert [s.id for s in trace.steps] == ids and trace.output_text == text
    assert trace.summary.stop_reason == stop and trace.served.api == api
    for step in trace.steps:           # greedy fixtures: the chosen token tops its alternatives
        assert step.candidates and step.chosen_rank == 0 and step.candidates[0].id == step.id
        assert step.chosen_p_model == pytest.approx(step.candidates[0].p_model)
        assert all(a.p_model >= b.p_model for a, b in zip(step.candidates, step.candidates[1:]))


def test_a_stream_without_token_ids_needs_the_models_tokenizer(hostile, engine):
    """vLLM's chat API and Ollama send token texts or bytes, no ids: without a local tokenizer the
    trace cannot be made (said plainly); with one, its bytes map back to ids."""
    for name, api in (("vllm_chat.sse", "chat"), ("ollama_generate.ndjson", "ollama")):
        with pytest.raises(ServedError, match="gave no id for token 0"):
            run(at(hostile, f"fixture-{name}", token_ids=False, api=api), max_new_tokens=8)
    trace = run(at(hostile, "fixture-ollama_generate.ndjson", token_ids=False, api="ollama"), max_new_tokens=8,
                local=engine)
    assert trace.output_text == " Paris is the capital." and trace.summary.stop_reason == "max_tokens"
    words = (" Paris", " is", " the", " capital", ".")
    assert [s.id for s in trace.steps] == [engine.encode(w, templated=True)[0] for w in words]
    body = hostile.bodies[-1]            # Ollama applies its own template: the visitor's prompt goes as it is
    assert body["prompt"] == "The capital of France is" and body["logprobs"] is True


def test_the_chapters_say_what_a_server_hides(hostile):
    """Attention, the lens and the cache stay on the server: the views say so instead of drawing
    zeros; the server's probabilities are one distribution; the speed cards are the client's."""
    from viz.html import cards
    from viz.charts import decode, kv, speed
    from viz.charts.attention import heatmap
    trace = run(at(hostile, "good"), max_new_tokens=3)
    for draw in (lambda: heatmap(trace, 0, None, lang="en"), lambda: decode.lens_chart(trace, 0, lang="en")):
        with pytest.raises(ValueError, match="does not expose attention"):
            draw()
    with pytest.raises(ValueError, match="does not expose its KV cache"):      # no config known: no formula
        kv.kv_growth_chart(trace, lang="en")
    chart = decode.candidates_chart(trace, 0, lang="en").to_dict()
    assert chart["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["the server's probability"]
    html = cards.speed_html(trace, lang="en")
    assert "inter-token latency (ITL)" in html and "watching cost" not in html and "client-side" in html
    facts = cards.step_html(trace, 1, lang="en")
    assert "rank among the server&#x27;s top 2" in facts and "<th>forward pass" not in facts
    timeline = speed.timeline_chart(trace, lang="zh").to_dict()
    assert "请求 → 第一块数据" in json.dumps(timeline, ensure_ascii=False)


def test_a_served_trace_with_the_models_config_draws_the_kv_formula_only(hostile, engine):
    from viz.charts import kv
    trace = run(at(hostile, "fixture-ollama_generate.ndjson", token_ids=False, api="ollama"), max_new_tokens=8,
                local=engine)
    chart = kv.kv_growth_chart(trace, lang="en").to_dict()
    assert len(chart["layer"]) == 1 and "projection" in chart["title"]["text"]      # no measured points


def test_the_load_sweep_counts_failures_and_keeps_its_bounds(hostile):
    from engine.served.load import load_sweep
    result = load_sweep(at(hostile, "stall"), "hi", max_tokens=3, levels=(1, 2), rounds=1)
    assert [r["failed"] for r in result["levels"]] == [1, 2] and "stalled" in result["levels"][0]["errors"][0]
    good = load_sweep(at(hostile, "good"), "hi", max_tokens=3, levels=(1, 4), rounds=2)
    assert [(r["requests"], r["failed"], r["output_tokens"]) for r in good["levels"]] == [(2, 0, 6), (8, 0, 24)]
    for bad in ({"levels": (0, 1)}, {"levels": (16,)}, {"rounds": 9}, {"max_tokens": 0}):
        with pytest.raises(InvalidRequest):
            load_sweep(at(hostile, "good"), "hi", **{"max_tokens": 3, **bad})
    spent = load_sweep(at(hostile, "good"), "hi", max_tokens=3, levels=(1, 2, 4), budget_s=0)
    assert spent["stopped"].startswith("time budget") and len(spent["levels"]) <= 1


def test_the_load_sweep_yields_to_a_visitors_run(hostile):
    """A visitor's run that begins during a wave cuts the wave's streams at once, no new stream is
    sent while it runs, and the wave is sent again afterwards (engine/host/house.py)."""
    from engine.host.house import HOUSE
    from engine.served.load import load_sweep
    box: dict = {}
    before = len(hostile.bodies)
    sweep = threading.Thread(target=lambda: box.update(result=load_sweep(
        at(hostile, "trickle"), "hi", max_tokens=3, levels=(1,), rounds=1, budget_s=30)))
    sweep.start()
    # its wave is streaming (the server has its request; then a byte every 0.2 s)
    wait_until(lambda: len(hostile.bodies) > before and HOUSE.jobs, 30, "the load sweep's wave streaming")
    with HOUSE.visitor_run():
        time.sleep(0.4)
        sent = len(hostile.bodies)
        assert [j.kind for j in HOUSE.jobs] == ["load_sweep"] and HOUSE.jobs[0].interrupted.is_set()
        time.sleep(1.0)
        assert len(hostile.bodies) == sent            # nothing sent while the visitor runs
    sweep.join(30)
    result = box["result"]
    assert result["waves_redone"] == 1 and result["visitor_runs_between"] == 1
    assert result["levels"][0]["requests"] == 1 and len(hostile.bodies) == sent + 1
    assert not HOUSE.jobs


def test_the_load_sweep_sends_what_a_run_sends(hostile, engine):
    """The page's load sweep (ui/chapters/run.py) sends the text a run of the same prompt sends: the chat
    template applied by the local tokenizer for a completions endpoint, the prompt as it is for a
    chat one (the server applies its own) or where no tokenizer is named. A raw question sent to a
    chat-tuned model ended at once: every level 'streamed no content' while Run worked."""
    from engine.served.client import sent_text
    from engine.served.load import load_sweep
    question = "Why do cats purr? Answer in two sentences."
    where = at(hostile, "good")
    run(where, question, local=engine)
    ran = hostile.bodies[-1]["prompt"]
    assert ran == engine.apply_template(question, Settings()) and ran != question
    load_sweep(where, sent_text(where, question, Settings(), engine), max_tokens=3, levels=(1,), rounds=1)
    assert hostile.bodies[-1]["prompt"] == ran
    assert sent_text(where, question, Settings(chat_template=False), engine) == question
    assert sent_text(where, question, Settings(), None) == question
    chat = endpoint("http://127.0.0.1:9/v1", "test-model", api="chat")
    assert sent_text(chat, question, Settings(), engine) == question
