"""The compiled decode step against eager under thread and oneDNN settings, in one process, interleaved.

    .venv/bin/python scripts/compiled_ab.py [--rounds 5]

Uses the package the app built (~/.cache/token-by-token/inductor/aoti/; start `make run` once with the
compiled path on to build it). Each round times every setting with engine/compiled/check.compare (16
greedy steps, eager and compiled in turns); prints one JSON line per round and setting, then medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SETTINGS = (("2 threads, oneDNN on", 2, True), ("1 thread, oneDNN on", 1, True), ("2 threads, oneDNN off", 2, False))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import torch

    from engine.compiled import aoti, check
    from engine.compiled.fast import BUCKETS, FastPath
    from engine.model.core import Engine
    engine = Engine.load(None)
    fast = FastPath(engine.model, engine.device, engine.info.id)
    path = fast.package(BUCKETS[0])
    if not path.exists():
        print(f"no compiled package at {path}: build it first (make run, or python -m engine bench)", file=sys.stderr)
        return 1
    runner, rows = aoti.load(path), []
    threads_before, onednn_before = torch.get_num_threads(), torch.backends.mkldnn.enabled
    try:
        for rnd in range(args.rounds):
            for name, threads, onednn in SETTINGS:
                torch.set_num_threads(threads)
                torch.backends.mkldnn.enabled = onednn
                c = check.compare(runner, fast.config, engine.model, engine.device, BUCKETS[0], rounds=1)
                rows.append({"setting": name, "round": rnd, "eager_ms": c["eager_ms"], "compiled_ms": c["compiled_ms"],
                             "ratio": c["ratio"], "same_tokens": c["same_tokens"], "load_1m": round(os.getloadavg()[0], 2)})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        torch.set_num_threads(threads_before)
        torch.backends.mkldnn.enabled = onednn_before
    for name, _, _ in SETTINGS:
        mine = [r for r in rows if r["setting"] == name]
        print(json.dumps({"setting": name, "eager_ms": statistics.median(r["eager_ms"] for r in mine),
                          "compiled_ms": statistics.median(r["compiled_ms"] for r in mine),
                          "ratios": [r["ratio"] for r in mine], "cpu": torch.backends.cpu.get_cpu_capability()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
