"""Steady traffic, from outside: does a visitor's heavy job still finish while others never stop running?

    python scripts/steady.py [--seconds 300] [--clients 2] [--tokens 48] [--limit 3] [--json out.json]
                             [--root FOLDER] [--floor-requests N] [--floor-new N]

1. `python app.py` as shipped, less the compiled step's build (TBT_COMPILE=0: a back-room job of its own
   that would share the probe's turns); `--root` runs another checkout's app.py (today's code, to show
   the hazard) with this Python.
2. Alone: one 48-token greedy /trace, then a third visitor's lab roofline and the serving floor's default
   workload, each through the page's own events (the page's Run buttons: gradio_client with the event's
   index, as the page sends it), timed.
3. Steady: `--clients` clients run /trace back to back for `--seconds`; a few seconds in, the third
   visitor runs the roofline, then the floor, as before. A job that has taken `--limit` times its
   time alone is given up (cancelled) and counts as failed; the traffic goes on until both are done
   or given up, and at least `--seconds`. A job that fails alone (the floor's default workload took
   more than the host's 240 s floor budget on a 2-core box shared with other work) is not run again:
   `--floor-requests` / `--floor-new` make the floor's workload smaller (the page's defaults otherwise).
Each phase's figures are printed to stderr as they come (a cut run still says what it measured).

Prints one JSON object: the times alone and under traffic, their ratios, every client's traces (how
many, their wall times, errors) and the verdict: each job within `--limit` x its time alone, and every
client served all the while. The rule (issue 52): <= 3x.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.servers import stop  # noqa: E402
PROMPT = "Explain why the sky is blue."


class App:
    """The app in a process of its own, stopped by its pid (`stop`)."""

    def __init__(self, root: Path, port: int, log: Path):
        env = {k: v for k, v in os.environ.items() if k not in ("TBT_LAB", "TBT_COMPILE_CACHE")}
        env.update(TBT_COMPILE="0", PYTHONPATH=str(root))
        self.url = f"http://127.0.0.1:{port}/"
        self.log = open(log, "w")
        self.proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=root, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self, timeout_s: float = 600.0) -> None:
        from gradio_client import Client
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app exited; see {self.log.name}")
            try:
                urllib.request.urlopen(self.url, timeout=2)
                Client(self.url, verbose=False).predict(api_name="/status")     # the model is loaded
                return
            except Exception:
                time.sleep(1.0)
        raise RuntimeError("the app was not ready in time")

    def stop(self) -> None:
        stop(self.proc)           # tests/servers.py: SIGTERM, then SIGKILL, then a back-room child left over
        self.log.close()


def client(url: str):
    from gradio_client import Client
    return Client(url, verbose=False)


def page_event(c, elem_id: str) -> tuple[int, list]:
    """The index of the click event of the button `elem_id` and the page's default for each input the
    visitor sets (a gr.State's value is the session's own: the client leaves it out)."""
    comps = {comp["id"]: comp for comp in c.config["components"]}
    button = next(i for i, comp in comps.items() if comp.get("props", {}).get("elem_id") == elem_id)
    dep = next(d for d in c.config["dependencies"] if [button, "click"] in [list(t) for t in d["targets"]])
    index = dep["id"]
    c.endpoints[index].is_valid = True           # a page event: the page calls it so, by index
    values = [comps[i]["props"].get("value") for i in dep["inputs"] if comps[i]["type"] != "state"]
    return index, values


def run_job(url: str, elem_id: str, limit_s: float | None, overrides: dict | None = None) -> dict:
    """A third visitor presses the button `elem_id` (its inputs at the page's defaults, less
    `overrides` {position: value}) and waits for the job's end (or gives up at `limit_s`)."""
    c = client(url)
    index, values = page_event(c, elem_id)
    for i, v in (overrides or {}).items():
        values[i] = v
    start = time.monotonic()
    job = c.submit(*values, fn_index=index)
    while not job.done():
        if limit_s is not None and time.monotonic() - start > limit_s:
            job.cancel()
            return {"finished": False, "seconds": round(time.monotonic() - start, 1), "given_up": True}
        time.sleep(0.5)
    try:
        job.result()
    except Exception as exc:                     # a refusal (gr.Error) or a failed job
        return {"finished": False, "seconds": round(time.monotonic() - start, 1), "error": str(exc)[:300]}
    return {"finished": True, "seconds": round(time.monotonic() - start, 1)}


def said(what: str, value) -> None:
    print(f"[steady] {what}: {json.dumps(value)}", file=sys.stderr, flush=True)


def trace_once(c, tokens: int) -> float:
    start = time.monotonic()
    c.predict(PROMPT, tokens, 0.0, api_name="/trace")
    return time.monotonic() - start


class Traffic:
    """Clients that run /trace back to back until `stop` is set."""

    def __init__(self, url: str, clients: int, tokens: int):
        self.stop, self.tokens = threading.Event(), tokens
        self.walls: list[list[float]] = [[] for _ in range(clients)]
        self.errors: list[list[str]] = [[] for _ in range(clients)]
        self.threads = [threading.Thread(target=self.loop, args=(url, i), daemon=True) for i in range(clients)]

    def loop(self, url: str, i: int) -> None:
        c = client(url)
        while not self.stop.is_set():
            try:
                self.walls[i].append(round(trace_once(c, self.tokens), 2))
            except Exception as exc:
                self.errors[i].append(str(exc)[:200])
                time.sleep(1.0)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        for t in self.threads:
            t.join(600)

    def report(self) -> list[dict]:
        return [{"traces": len(w), "errors": len(e), "first_errors": e[:3],
                 "wall_s_median": statistics.median(w) if w else None, "wall_s_max": max(w) if w else None}
                for w, e in zip(self.walls, self.errors)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="steady traffic at least this long (5 minutes)")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--limit", type=float, default=3.0, help="a job may take this many times its time alone")
    ap.add_argument("--port", type=int, default=7895)
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose app.py runs (default: this one)")
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--floor-requests", type=int, help="the floor workload's requests (the page's default: unset)")
    ap.add_argument("--floor-new", type=int, help="the floor workload's new tokens a request (default: unset)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))     # the app is stopped in `finally`
    floor = {k: v for k, v in ((0, args.floor_requests), (5, args.floor_new)) if v is not None}
    overrides = {"roofline": None, "floor": floor}
    out = Path(tempfile.mkdtemp(prefix="tbt-steady-"))
    jobs = {"roofline": "lab-roofline-run", "floor": "floor-run"}
    result: dict = {"seconds": args.seconds, "clients": args.clients, "tokens": args.tokens, "limit": args.limit,
                    "root": args.root, "alone": {}, "steady": {}}
    app = App(Path(args.root), args.port, out / "app.log")
    try:
        app.ready()
        c = client(app.url)
        trace_once(c, args.tokens)                                       # warm-up
        result["alone"]["trace_s"] = round(statistics.median(trace_once(c, args.tokens) for _ in range(3)), 2)
        said("alone trace_s", result["alone"]["trace_s"])
        for name, elem in jobs.items():
            result["alone"][name] = run_job(app.url, elem, None, overrides[name])
            said(f"alone {name}", result["alone"][name])
        start = time.monotonic()
        with Traffic(app.url, args.clients, args.tokens) as traffic:
            time.sleep(min(10.0, args.seconds / 10))                      # the traffic is steady
            for name, elem in jobs.items():
                if not result["alone"][name]["finished"]:
                    result["steady"][name] = {"finished": False, "not_run": "it did not finish alone"}
                    continue
                alone = result["alone"][name]["seconds"]
                done = run_job(app.url, elem, args.limit * alone, overrides[name])
                done["ratio"] = round(done["seconds"] / alone, 2)
                result["steady"][name] = done
                said(f"steady {name}", done)
            while time.monotonic() - start < args.seconds:
                time.sleep(1.0)
        result["steady"]["traffic_s"] = round(time.monotonic() - start, 1)
        result["steady"]["clients"] = traffic.report()
    finally:
        app.stop()
    served = all(r["traces"] > 0 and r["errors"] == 0 for r in result["steady"]["clients"])
    within = all(result["steady"][n].get("finished") and result["steady"][n]["ratio"] <= args.limit for n in jobs)
    result["floor_workload"] = {"requests": args.floor_requests, "new_tokens": args.floor_new}
    result["verdict"] = {"jobs_within_limit": within, "every_client_served": served, "pass": within and served}
    result["logs"] = str(out)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text, encoding="utf-8")
    sys.exit(0 if result["verdict"]["pass"] else 1)


if __name__ == "__main__":
    main()
