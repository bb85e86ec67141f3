"""Soak: many runs against the app as shipped, and the server's memory after every round.

    python scripts/soak.py [--runs 1000] [--clients 4] [--tokens 8] [--mix trace,compare,fork,upload,page]
    make soak

It starts `python app.py` (TBT_COMPILE=0 unless --compile: the compiled path's own memory is not
what this measures) on a free port of 127.0.0.1, waits for the model, samples the RSS of the server
and every process it started (psutil) when idle, then runs rounds: `--clients` threads, each with
its own gradio_client session, run their share of the round's calls, picked in turn from `--mix`:
- trace:   /trace with the page's defaults (attention and logit lens on), `--tokens` new tokens;
- compare: /compare (normal and reasoning mode), `--tokens` answer tokens, budget `--tokens`;
- fork:    /fork of this client's last /trace at step 0 with its second candidate;
- upload:  /read_trace of this client's last trace file (the page's upload path);
- page:    a Chromium page session (Playwright, /usr/bin/chromium) that opens the page, runs the
           prompt with `--tokens` tokens and closes its tab: the visitor leaves.
After each round the RSS is sampled again. It prints one JSON object: the curve (runs done, MB),
idle, after the first 100 runs, at the end, the caps /status reports and the verdict against the
issue's target (end <= after-100 + 150 MB, and never above idle + the caps that hold memory).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPTS = ["Hello, world!", "什么是量子计算", "Write a haiku about rain.", "List three fruits.",
           "Explain in two sentences why the sky is blue.", "小明去超市买了苹果，接着他", "Once upon a time"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# the caps that hold memory in the server: a run's own captures are freed when it ends, what stays
# is the prefix cache (KV caches for forking); the others bound one run (attention rows, lens states)
HELD_CAPS = ("prefix_cache_bytes",)
PER_RUN_CAPS = ("attention_max_bytes", "lens_max_bytes")


def rss_mb(pid: int) -> float:
    """RSS of the server and every process it started, in MB."""
    import psutil
    root = psutil.Process(pid)
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return round(total / 1e6, 1)


class Visitor:
    """One client thread: its gradio_client session and its last trace (for /fork and uploads).
    A visitor comes back as a new session every round (`renew`): the old Client is closed, as a
    script that ends or a tab that closes, and the server sees it leave."""

    def __init__(self, url: str, tokens: int, index: int):
        self.url, self.tokens, self.index, self.client = url, tokens, index, None
        self.last: str | None = None
        self.prompts = itertools.cycle(PROMPTS[index % len(PROMPTS):] + PROMPTS[:index % len(PROMPTS)])
        self.renew()

    def renew(self) -> None:
        from gradio_client import Client
        new = Client(self.url, verbose=False)
        if self.client is not None:
            self.client.close()
        self.client = new

    def trace(self) -> None:
        self.last = self.client.predict(next(self.prompts), self.tokens, api_name="/trace")

    def compare(self) -> None:
        self.client.predict(next(self.prompts), self.tokens, self.tokens, api_name="/compare")

    def fork(self) -> None:
        from gradio_client import handle_file

        from engine import Trace
        if self.last is None:
            self.trace()
        step = Trace.from_json(Path(self.last).read_bytes()).steps[0]
        token = step.candidates[1].id if len(step.candidates) > 1 else step.id
        self.client.predict(handle_file(self.last), 0, token, "", self.tokens, api_name="/fork")

    def upload(self) -> None:
        from gradio_client import handle_file
        if self.last is None:
            self.trace()
        self.client.predict(handle_file(self.last), api_name="/read_trace")


def page_session(browser, url: str, tokens: int, prompt: str) -> None:
    """A visitor opens the page, runs one prompt of `tokens` tokens and leaves (the tab closes)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("#output .tbt-recording", timeout=120_000)
        page.get_by_text("Generation settings").click()
        page.get_by_label("Max new tokens", exact=False).first.fill(str(tokens))
        page.keyboard.press("Enter")
        page.fill("#prompt textarea", prompt)
        page.click("#run")
        page.wait_for_selector("#output .tbt-rendered", state="attached", timeout=300_000)
    finally:
        context.close()


class Pages:
    """Chromium for the page sessions, on a thread of its own (Playwright's sync API is per thread)."""

    def __init__(self, url: str, tokens: int):
        self.url, self.tokens = url, tokens
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="soak-chromium")
        self.pool.submit(self._start).result()

    def _start(self) -> None:
        from playwright.sync_api import sync_playwright
        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)

    def session(self, prompt: str) -> None:
        self.pool.submit(page_session, self.browser, self.url, self.tokens, prompt).result()

    def close(self) -> None:
        def stop():
            self.browser.close()
            self.playwright.stop()
        self.pool.submit(stop).result()
        self.pool.shutdown()


def run_round(visitors: list[Visitor], kinds: list[str], pages: Pages | None, errors: list) -> int:
    """Each visitor runs its kinds in turn; returns the runs that completed."""
    done = [0]
    lock = threading.Lock()

    def one(visitor: Visitor, kind: str) -> None:
        try:
            if kind == "page":
                pages.session(PROMPTS[visitor.index % len(PROMPTS)])
            else:
                getattr(visitor, kind)()
            with lock:
                done[0] += 1
        except Exception as exc:                  # counted and reported, never raised
            errors.append(f"{kind}: {type(exc).__name__}: {str(exc)[:160]}")

    def visitor_work(i: int) -> None:
        try:
            visitors[i].renew()
        except Exception as exc:                  # a loaded server: the old session goes on
            errors.append(f"new session: {type(exc).__name__}: {str(exc)[:160]}")
        for kind in kinds[i::len(visitors)]:
            one(visitors[i], kind)
    with ThreadPoolExecutor(len(visitors)) as pool:
        list(pool.map(visitor_work, range(len(visitors))))
    return done[0]


def verdict(curve: list[dict], idle: float, caps: dict, in_flight: int = 1) -> dict:
    """The issue's target: RSS at the end <= RSS after the first 100 runs + 150 MB, and never above
    idle + the caps that hold memory between runs + one run's captures per client in flight."""
    after_100 = next((p["rss_mb"] for p in curve if p["runs"] >= 100), None)
    end, peak = curve[-1]["rss_mb"], max(p["rss_mb"] for p in curve)
    held = (sum(caps.get(k, 0) for k in HELD_CAPS) + in_flight * sum(caps.get(k, 0) for k in PER_RUN_CAPS)) / 1e6
    return {"idle_mb": idle, "after_100_mb": after_100, "end_mb": end, "peak_mb": peak,
            "growth_after_100_mb": round(end - after_100, 1) if after_100 else None,
            "held_caps_mb": held, "bounded_by_caps": peak <= idle + held,
            "within_150_mb": after_100 is not None and end <= after_100 + 150}


def soak(url: str, pid: int, args) -> dict:
    from gradio_client import Client
    status = Client(url, verbose=False).predict(api_name="/status")
    caps = status["limits"]
    kinds = args.mix.split(",")
    visitors = [Visitor(url, args.tokens, i) for i in range(args.clients)]
    pages = Pages(url, args.tokens) if "page" in kinds else None
    cold = rss_mb(pid)
    errors: list[str] = []
    # one run of each kind first: the first run of a kind loads what stays for every later one
    # (thread pools, tokenizer caches, Chromium's first page), so "idle" is a server that has served
    warm = run_round(visitors[:1], list(dict.fromkeys(kinds)), pages, errors)
    idle = rss_mb(pid)
    curve, runs, start = [{"runs": 0, "rss_mb": idle, "s": 0.0}], 0, time.monotonic()
    mix = itertools.cycle(kinds)
    try:
        while runs < args.runs and time.monotonic() - start < args.max_minutes * 60:
            round_kinds = [next(mix) for _ in range(min(args.per_round, args.runs - runs))]
            runs += run_round(visitors, round_kinds, pages, errors)
            curve.append({"runs": runs, "rss_mb": rss_mb(pid), "s": round(time.monotonic() - start, 1)})
            print(json.dumps(curve[-1]), file=sys.stderr, flush=True)
            if len(errors) > args.runs // 10 + 10:
                break                              # something is wrong: stop, and say so below
    finally:
        if pages:
            pages.close()
    return {"url": url, "runs": runs, "clients": args.clients, "tokens": args.tokens, "mix": kinds,
            "per_round": args.per_round, "errors": len(errors), "error_samples": errors[:5],
            "caps": {k: caps[k] for k in (*HELD_CAPS, *PER_RUN_CAPS, "share_bytes")},
            "status_after": Client(url, verbose=False).predict(api_name="/status")["active_runs"],
            "cold_idle_mb": cold, "warm_up_runs": warm, "curve": curve,
            "verdict": verdict(curve, idle, caps, in_flight=min(args.clients, status.get("runs_at_once", 1)))}


def wait_loaded(url: str, seconds: float = 600) -> None:
    from gradio_client import Client
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Client(url, verbose=False).predict(api_name="/status")["loaded"]:
                return
        except Exception:
            pass
        time.sleep(2)
    raise RuntimeError(f"the model did not load in {seconds:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=8)
    parser.add_argument("--per-round", type=int, default=40, help="runs between two RSS samples")
    parser.add_argument("--mix", default="trace,trace,compare,fork,upload,trace,page")
    parser.add_argument("--max-minutes", type=float, default=120, help="start no round after this long")
    parser.add_argument("--compile", action="store_true", help="leave the compiled decode path on")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    parser.add_argument("--log", default="soak-server", help="the server's log: test-output/LOG.log")
    args = parser.parse_args()
    from tests.servers import app_server
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **({} if args.compile else {"TBT_COMPILE": "0"}),
           **dict(e.split("=", 1) for e in args.env)}
    with app_server(args.log, env) as (proc, url):       # its output: test-output/LOG.log
        wait_loaded(url)
        result = soak(url, proc.pid, args)
    result["server_env"] = {k: env[k] for k in env if k.startswith(("TBT_", "MALLOC_"))}
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
