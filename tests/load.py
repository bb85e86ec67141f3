"""Load test: N concurrent clients x M runs against a local server, compared with sequential runs.

    python -m tests.load [--clients 8] [--runs 5] [--tokens 32] [--url http://127.0.0.1:PORT/]

Without --url it starts `python app.py` on a free port of 127.0.0.1 (tests/servers.py: its output
in test-output/load-server.log, stopped after); --url must point at this machine. First every input is run once, one at a time (the reference); then
the clients run them all at once. Half the inputs sample (temperature 0.8, top-k 40, their own
seed), so a leak of RNG state or cache between requests would show as a mismatch; every input
captures attention and the logit lens (unless --no-capture), so would a hook or capture state
shared between visitors. Prints one JSON object: requests, completed, errors, p50/p95 latency,
the server's RSS before and after, and whether every concurrent trace matched its sequential
reference: the same tokens, attention maps and rows, and logit-lens guesses.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from tests import numerics

PROMPTS = ["Hello, world!", "什么是量子计算", "Write a haiku about rain.", "List three fruits.",
           "Explain in two sentences why the sky is blue.", "小明去超市买了苹果，接着他",
           "Write a Python function that checks whether a number is prime.", "Once upon a time"]
LOCAL = {"127.0.0.1", "localhost", "::1"}


def inputs(clients: int, runs: int, tokens: int, capture: bool = True) -> list[dict]:
    """One request per (client, run); odd ones sample with their own seed; all capture attention
    and the logit lens unless `capture` is False."""
    out = []
    for c in range(clients):
        for r in range(runs):
            i = c * runs + r
            sampled = i % 2 == 1
            out.append(dict(prompt=PROMPTS[i % len(PROMPTS)], max_new_tokens=tokens,
                            temperature=0.8 if sampled else 0.0, top_k=40 if sampled else 0, top_p=1.0,
                            seed=1000 + i, attention=capture, logit_lens=capture, chat_template=True))
    return out


def rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def differences(got, want) -> list[str]:
    """Where trace `got` differs from the reference `want` of the same input ([] when it matches):
    generated tokens, captured attention (prefill maps, per-step rows), logit-lens guesses. Two runs
    may have added in another order (another process, another thread count: tests/numerics.py): the
    tokens may part at a near tie of `want`'s, and then each step's captures are compared up to that
    step (the passes after it read other tokens); attention is stored rounded to 1/4095
    (engine/schema/packed.py) and two packings may each round a value its own way (PACKED_PAIR); lens
    probabilities within ORDER."""
    out = []
    ids, reference = [s.id for s in got.steps], [s.id for s in want.steps]
    if not numerics.same_greedy(ids, reference, numerics.margins(want.steps)):
        out.append("tokens")
    alike = numerics.fed_alike(ids, reference)
    a, b = got.attention, want.attention
    if (a is None) != (b is None):
        out.append("attention present in one only")
    elif a is not None:
        if len(a.prefill) != len(b.prefill) or len(a.steps) != len(b.steps) and ids == reference:
            out.append("attention block counts")
        else:
            for kind, pairs in (("prefill", zip(a.prefill, b.prefill)),
                                ("rows", zip(a.steps[:alike], b.steps[:alike]))):
                for i, (x, y) in enumerate(pairs):
                    if x.shape != y.shape or not np.allclose(x.unpack(), y.unpack(), rtol=0, atol=numerics.PACKED_PAIR):
                        out.append(f"attention {kind} {i}")
                        break
    for i, (x, y) in enumerate(zip(got.steps[:alike], want.steps[:alike])):
        if (x.lens is None) != (y.lens is None) or x.lens and (
                [g.id for g in x.lens] != [g.id for g in y.lens]
                or not numerics.close([g.p for g in x.lens], [h.p for h in y.lens], 1)):
            out.append(f"lens at step {i}")
            break
    return out


def call(url: str, request: dict, timeout_s: float):
    """(trace, seconds, error) of one /trace request from a fresh client; trace None on error."""
    from gradio_client import Client

    from engine import Trace
    start = time.monotonic()
    try:
        job = Client(url, verbose=False).submit(**request, api_name="/trace")
        path = job.result(timeout=timeout_s)
        return Trace.from_json(Path(path).read_bytes()), time.monotonic() - start, None
    except Exception as exc:                       # counted and reported, never raised
        return None, time.monotonic() - start, f"{type(exc).__name__}: {str(exc)[:200]}"


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_load(url: str, clients: int, runs: int, tokens: int, pid: int | None = None,
             timeout_s: float = 600, capture: bool = True) -> dict:
    requests = inputs(clients, runs, tokens, capture)
    deadline = time.monotonic() + timeout_s
    reference = {}
    for i, request in enumerate(requests):          # the sequential reference, one at a time
        trace, _, error = call(url, request, max(1.0, deadline - time.monotonic()))
        if error:
            raise RuntimeError(f"sequential reference run {i} failed: {error}")
        if capture and (trace.attention is None or not trace.attention.steps or trace.steps[0].lens is None):
            raise RuntimeError(f"sequential reference run {i} captured no attention or lens")
        reference[i] = trace
    rss_before = rss_mb(pid)
    start = time.monotonic()

    def client(c: int) -> list[tuple]:
        out = []
        for r in range(runs):
            i = c * runs + r
            out.append((i, *call(url, requests[i], max(1.0, deadline - time.monotonic()))))
        return out

    with ThreadPoolExecutor(clients) as pool:
        results = [row for rows in pool.map(client, range(clients)) for row in rows]
    wall = time.monotonic() - start
    rss_after = rss_mb(pid)
    latencies = [s for _, _, s, err in results if err is None]
    errors = [err for _, _, _, err in results if err is not None]
    mismatches = [(i, found) for i, trace, _, err in results
                  if err is None and (found := differences(trace, reference[i]))]
    return {
        "url": url, "clients": clients, "runs_per_client": runs, "new_tokens": tokens,
        "capture": capture, "requests": len(results), "completed": len(latencies), "errors": len(errors),
        "error_samples": errors[:3], "mismatches": len(mismatches),
        "mismatch_samples": [f"request {i}: {', '.join(found)}" for i, found in mismatches[:3]],
        "all_match_sequential": not mismatches,
        "latency_p50_s": round(percentile(latencies, 0.5) or 0, 2),
        "latency_p95_s": round(percentile(latencies, 0.95) or 0, 2),
        "latency_mean_s": round(statistics.fmean(latencies), 2) if latencies else None,
        "wall_s": round(wall, 1), "tokens_per_s_total": round(len(latencies) * tokens / wall, 1) if wall else None,
        "rss_before_mb": rss_before, "rss_after_mb": rss_after,
        "rss_growth_mb": round(rss_after - rss_before, 1) if rss_before and rss_after else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--url", default=None, help="a server on this machine (default: start one)")
    parser.add_argument("--pid", type=int, default=None, help="the --url server's process id, for its RSS")
    parser.add_argument("--concurrency", type=int, default=None, help="TBT_CONCURRENCY of the started server")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole test")
    parser.add_argument("--no-capture", dest="capture", action="store_false",
                        help="plain runs: no attention capture, no logit lens")
    args = parser.parse_args()
    if not (1 <= args.clients <= 32 and 1 <= args.runs <= 20 and 1 <= args.tokens <= 256):
        parser.error("keep it bounded: clients 1-32, runs 1-20, tokens 1-256")
    if args.url:
        if urlparse(args.url).hostname not in LOCAL:
            parser.error("--url must be a server on this machine (127.0.0.1 or localhost)")
        result = run_load(args.url, args.clients, args.runs, args.tokens, args.pid, args.timeout, args.capture)
    else:
        from tests.servers import app_server
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        if args.concurrency is not None:
            env["TBT_CONCURRENCY"] = str(args.concurrency)
        with app_server("load-server", env) as (proc, url):       # its output: test-output/load-server.log
            result = run_load(url, args.clients, args.runs, args.tokens, proc.pid, args.timeout, args.capture)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    sys.exit(0 if result["errors"] == 0 and result["all_match_sequential"] else 1)


if __name__ == "__main__":
    main()
