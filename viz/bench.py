"""`python -m viz.bench [--json]`: render times of the views that are redrawn most, on the recorded
fixture traces (tests/fixtures). The unit tests check what these views show; how fast they are is
measured here, because a wall-clock limit inside a unit test fails whenever the machine is busy.

Views: the output chips of a ~500-token run (re-rendered after every token in the app) and the
prefill heatmap with the head view at 256 prompt tokens (the engine's map cap), both built from
the fixtures as the unit tests build them, plus the same views on each fixture as it is. Each is
rendered `--repeats` times; the report gives the median and fastest ms, and the budget if it has one.
No torch: viz never imports it.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path

import numpy as np

from engine.schema.packed import PackedRows
from engine.schema.trace import Attention, PromptToken, Trace

from viz.charts import attention

from viz import html

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
TRACES = ("trace_zh.json", "trace_en_sampled.json")
OUTPUT_BUDGET_MS = 50        # one re-render of the output chips, per generated token
HEATMAP_BUDGET_MS = 5000     # heatmap + head view specs at 256 prompt tokens


def load(name: str) -> Trace:
    return Trace.from_json((FIXTURES / name).read_text(encoding="utf-8"))


def long_output(trace: Trace, copies: int = 20) -> Trace:
    """The trace with its steps repeated (24 steps x 20 = 480 tokens)."""
    t = copy.deepcopy(trace)
    t.steps = [copy.deepcopy(s) for _ in range(copies) for s in trace.steps]
    for i, s in enumerate(t.steps):
        s.index = i
    return t


def long_prompt(trace: Trace, n: int = 256, seed: int = 0) -> Trace:
    """The trace with a synthetic prompt of n + 20 tokens whose first n have random causal maps."""
    t = copy.deepcopy(trace)
    words = [" the", " cat", "\n", "量", " sat"]
    total = n + 20
    t.prompt.tokens = [PromptToken(id=i, text=words[i % 5], bytes_hex="20", start=i, end=i + 1,
                                   fragment=False, special=False) for i in range(total)]
    t.prompt.templated = "x" * total
    logits = np.random.default_rng(seed).normal(size=(t.model.heads, n, n)) * 3
    logits[:, :, 0] += 4
    logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
    maps = np.exp(logits - logits.max(-1, keepdims=True))
    maps /= maps.sum(-1, keepdims=True)
    packed = PackedRows.pack(maps)
    t.attention = Attention(prefill_tokens=n, prefill_capped=True, prefill=[packed] * 2, steps=[])
    return t


def charts(t: Trace, query: int) -> None:
    """Both attention views as the browser gets them: validated Vega-Lite JSON."""
    json.dumps(attention.heatmap(t, 0, None).to_dict(), allow_nan=False)
    json.dumps(attention.head_view(t, min(1, len(t.attention.prefill) - 1), 3, query).to_dict(), allow_nan=False)


def timed(fn, repeats: int, budget_ms: float | None = None) -> dict:
    fn()   # warm-up: first calls pay one-off costs (schema loading, imports)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    median = statistics.median(times)
    return {"median_ms": round(median, 2), "min_ms": round(min(times), 2), "budget_ms": budget_ms,
            "within_budget": None if budget_ms is None else median <= budget_ms}


def bench(repeats: int = 5) -> dict:
    traces = {name: load(name) for name in TRACES}
    en, zh = traces["trace_en_sampled.json"], traces["trace_zh.json"]
    out, wide = long_output(en), long_prompt(zh)
    views = {
        f"output_html_{len(out.steps)}_tokens": timed(lambda: html.output_html(out), repeats, OUTPUT_BUDGET_MS),
        "heatmap_and_head_view_256_tokens": timed(lambda: charts(wide, 200), repeats, HEATMAP_BUDGET_MS),
    }
    for name, t in traces.items():
        stem = name.removesuffix(".json")
        views[f"output_html:{stem}"] = timed(lambda t=t: html.output_html(t), repeats)
        views[f"heatmap_and_head_view:{stem}"] = timed(lambda t=t: charts(t, len(t.prompt.tokens) - 1), repeats)
    return {"repeats": repeats, "views": views}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if not 1 <= args.repeats <= 100:
        parser.error("--repeats: 1 to 100")
    result = bench(args.repeats)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for name, r in result["views"].items():
        budget = "" if r["budget_ms"] is None else f"  (budget {r['budget_ms']} ms: {'ok' if r['within_budget'] else 'OVER'})"
        print(f"{name:45s} median {r['median_ms']:9.2f} ms  min {r['min_ms']:9.2f} ms{budget}")


if __name__ == "__main__":
    main()
