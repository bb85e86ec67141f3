"""What concurrent load does to a served model: `c` streams at once for c = 1, 2, 4, 8, timed from
this side as vLLM's serving benchmark times them (benchmarks/benchmark_serving.py):

- TTFT: request sent -> first chunk with content; ITL: the gap between two content chunks;
  TPOT = (E2EL - TTFT) / (output tokens - 1); E2EL: request sent -> last chunk;
- throughput: output tokens of a level / the level's wall time; request rate likewise;
- goodput: requests per second that met every SLO the host set (TTFT and TPOT limits).

Plain streams, without logprobs (as the benchmark sends them). A token is a content chunk unless
the server reports its own count (`usage.completion_tokens`). Bounded: at most 8 streams at once,
`rounds` waves per level, and a time budget after which the sweep stops between waves and says so.
Yields to visitors (engine/host/house.py): a wave starts only when no visitor's run is in progress, and
one that a run interrupts is dropped and sent again.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from engine import environment
from engine.errors import InvalidRequest
from engine.host.house import HOUSE
from engine.served.dialects import dialect_for
from engine.served.pieces import decode
from engine.served.endpoints import Endpoint
from engine.served.sse import Abort, ServedError, events

LEVELS = (1, 2, 4, 8)
MOST = 8
# one bounded sweep, as the page runs it and `python -m engine load` unless told otherwise
MAX_TOKENS, ROUNDS, BUDGET_S = 32, 1, 90.0


@dataclass(frozen=True)
class Slo:
    """A service-level objective; by default the host's (TBT_SLO_TTFT_MS / TBT_SLO_TPOT_MS)."""
    ttft_ms: float
    tpot_ms: float

    @classmethod
    def of_host(cls) -> Slo:
        return cls(*environment.slo_ms())


def one_request(endpoint: Endpoint, prompt: str, max_tokens: int, cancel=None) -> dict:
    """Stream one completion; its times on this side."""
    dialect = dialect_for(endpoint.api, endpoint.token_ids)
    body = {**dialect.body(endpoint.model, prompt, max_tokens, 0.0, 0, 0), **dict(endpoint.extra)}
    start = time.monotonic() * 1000
    arrivals, usage, finish = [], None, None
    for arrived, payload in events(endpoint.base_url + dialect.path, body, dialect.sse, endpoint.bounds,
                                   endpoint.headers(), cancel):
        event = dialect.parse(decode(payload))
        usage, finish = event.usage or usage, event.finish or finish
        if event.text or event.pieces:
            arrivals.append(arrived - start)
    if not arrivals:
        raise ServedError(f"{endpoint.name} streamed no content")
    if finish is None:          # cut off (llama-cpp-python's server drops a request when another arrives)
        raise ServedError(f"{endpoint.name}'s stream ended without a finish reason: cut off")
    n = (usage or {}).get("completion_tokens") or len(arrivals)
    ttft, e2el = arrivals[0], arrivals[-1]
    return {"ttft_ms": ttft, "e2el_ms": e2el, "tokens": int(n),
            "tpot_ms": (e2el - ttft) / (n - 1) if n > 1 else None,
            "itl_ms": [b - a for a, b in zip(arrivals, arrivals[1:])]}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _level(concurrency: int, results: list[dict], wall_ms: float, slo: Slo) -> dict:
    ok = [r for r in results if "error" not in r]
    ttft = [r["ttft_ms"] for r in ok]
    tpot = [r["tpot_ms"] for r in ok if r["tpot_ms"] is not None]
    itl = [x for r in ok for x in r["itl_ms"]]
    good = [r for r in ok if r["ttft_ms"] <= slo.ttft_ms and (r["tpot_ms"] or 0) <= slo.tpot_ms]
    tokens = sum(r["tokens"] for r in ok)
    return {"concurrency": concurrency, "requests": len(results), "failed": len(results) - len(ok),
            "errors": sorted({r["error"] for r in results if "error" in r})[:3],
            "ttft_p50_ms": _pct(ttft, 0.5), "ttft_p95_ms": _pct(ttft, 0.95),
            "tpot_p50_ms": _pct(tpot, 0.5), "tpot_p95_ms": _pct(tpot, 0.95),
            "itl_p50_ms": _pct(itl, 0.5), "itl_p95_ms": _pct(itl, 0.95),
            "e2el_p50_ms": _pct([r["e2el_ms"] for r in ok], 0.5),
            "output_tokens": tokens, "wall_ms": wall_ms,
            "throughput_tok_s": tokens / wall_ms * 1000 if wall_ms > 0 else 0.0,
            "request_rate": len(ok) / wall_ms * 1000 if wall_ms > 0 else 0.0,
            "goodput": len(good) / wall_ms * 1000 if wall_ms > 0 else 0.0,
            "good_requests": len(good)}


def load_sweep(endpoint: Endpoint, prompt: str, max_tokens: int = MAX_TOKENS, levels=LEVELS, rounds: int = ROUNDS,
               slo: Slo | None = None, budget_s: float = BUDGET_S, progress=None,
               cancel: threading.Event | None = None) -> dict:
    """Each level: `rounds` waves of `c` requests sent together; a failed request is counted and
    named, never fatal; the sweep stops between waves when the budget is spent or on cancel."""
    slo = slo or Slo.of_host()
    levels = sorted({int(c) for c in levels})
    if not levels or levels[0] < 1 or levels[-1] > MOST:
        raise InvalidRequest(f"concurrency levels must lie in 1..{MOST}")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidRequest("the prompt is empty")
    if not 1 <= max_tokens <= 1024 or not 1 <= rounds <= 5:
        raise InvalidRequest("max_tokens must lie in 1..1024 and rounds in 1..5")
    start, rows, stopped = time.monotonic(), [], None
    total, done = len(levels) * rounds, 0
    with ThreadPoolExecutor(max_workers=levels[-1]) as pool, \
            HOUSE.job("load_sweep", f"load sweep of {endpoint.name}", holds_s=0.5) as job:
        for c in levels:
            results, wall = [], 0.0
            for _ in range(rounds):
                if cancel is not None and cancel.is_set():
                    stopped = "cancelled"
                elif time.monotonic() - start > budget_s:
                    stopped = f"time budget of {budget_s:g} s spent"
                if stopped:
                    break
                if progress:
                    progress(done / total, f"{c} concurrent stream{'s' if c > 1 else ''}")
                measured = _wave(pool, endpoint, prompt, max_tokens, c, cancel, job, start + budget_s)
                if measured is None:
                    continue          # cancelled, or the budget ran out waiting for a quiet house
                results += measured[0]
                wall += measured[1]
                done += 1
            if results:
                rows.append(_level(c, results, wall, slo))
            if stopped:
                break
    return {"endpoint": endpoint.name, "model": endpoint.model, "api": endpoint.api, "prompt": prompt,
            "max_tokens": max_tokens, "rounds": rounds, "slo": {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms},
            "levels": rows, "stopped": stopped, "seconds": round(time.monotonic() - start, 2),
            # it yields to visitors' runs: each wave runs on a quiet house, one cut short is sent again
            "visitor_runs_between": job.runs_between, "waves_redone": job.redone,
            "note": "client-side times as vLLM's serving benchmark defines them; plain streams without logprobs"}


def _wave(pool, endpoint: Endpoint, prompt: str, max_tokens: int, c: int, cancel, job,
          deadline: float) -> tuple | None:
    """One wave of `c` streams, on a quiet house: a visitor's run that begins meanwhile stops the
    wave's streams at once (its time would be shared), and the wave is sent again once the run ends.
    None: cancelled, or past `deadline` (time.monotonic()) before a wave could finish undisturbed."""
    while True:
        while not HOUSE.quiet(timeout=0.5):
            if time.monotonic() > deadline or (cancel is not None and cancel.is_set()):
                return None
        if time.monotonic() > deadline or (cancel is not None and cancel.is_set()):
            return None
        stop, done = Abort(), threading.Event()          # a cut wave frees the server at once

        def watch():
            while not done.is_set():
                if job.interrupted.wait(0.05) or (cancel is not None and cancel.is_set()):
                    stop.set()
                    return
        threading.Thread(target=watch, daemon=True).start()
        wave = time.monotonic()
        futures = [pool.submit(_safe, endpoint, prompt, max_tokens, stop) for _ in range(c)]
        results = [f.result() for f in futures]
        wall = (time.monotonic() - wave) * 1000
        done.set()
        if not stop.is_set():
            return results, wall
        job.redone += 1


def _safe(endpoint: Endpoint, prompt: str, max_tokens: int, cancel) -> dict:
    try:
        return one_request(endpoint, prompt, max_tokens, cancel)
    except ServedError as exc:
        return {"error": str(exc)[:200]}
