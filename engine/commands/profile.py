"""`python -m engine profile`: where one run's time goes, op by op, measured beside the roofline."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from engine.commands import model_args

NAME = "profile"
HELP = "per-op profile of a run's prefill and one decode step: measured ms beside the roofline's, FLOPs, bytes"


def add_arguments(p) -> None:
    model_args(p, attn=False)
    p.add_argument("--prompt", default="Explain in two sentences why the sky is blue.")
    p.add_argument("--max-new-tokens", type=int, default=48, help="tokens the run generates before it is profiled")
    p.add_argument("--trace", default=None, help="profile the run in this trace file instead of a new run")
    p.add_argument("--step", type=int, default=None, help="the decode step to profile (default: the run's middle)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed passes of each kind (default: as many as the page times, engine/profile/run.py)")
    p.add_argument("--project", action="store_true", help="add the projection onto the roofline's GPUs and models")
    p.add_argument("--machine", default=None,
                   help="a lab result (python -m engine lab --json) whose measured bandwidth and FLOP/s to use "
                        "instead of measuring again, when it was measured on this host (the recordings share one)")
    p.add_argument("--table", action="store_true", help="print a Markdown table of the per-op totals")
    p.add_argument("--json", action="store_true", help="print JSON only (one line)")
    p.add_argument("--out", default=None, help="also write the JSON here")


def table(result: dict) -> str:
    """Per op, summed over layers: prefill and decode, measured and predicted (the table in docs/performance.md)."""
    pre, dec = result["phases"]["prefill"], result["phases"]["decode"]
    fmt = (lambda v: "–" if v is None else f"{v:.2f}")
    lines = [f"| op | prefill ({pre['tokens']} tokens) measured ms | roofline ms | bound | "
             f"decode step {result['decode_step']} measured ms | roofline ms | bound |",
             "|---|---:|---:|---|---:|---:|---|"]
    for a, b in zip(pre["ops"], dec["ops"]):
        lines.append(f"| {a['op']} | {fmt(a['measured_ms'])} | {fmt(a['predicted_ms'])} | {a['bound'] or '–'} | "
                     f"{fmt(b['measured_ms'])} | {fmt(b['predicted_ms'])} | {b['bound'] or '–'} |")
    lines.append(f"| **the pass, no timers** | **{pre['forward_ms']:.1f}** | **{pre['predicted_ms']:.2f}** | | "
                 f"**{dec['forward_ms']:.1f}** | **{dec['predicted_ms']:.2f}** | |")
    return "\n".join(lines)


def run(args) -> int:
    from engine.model.core import Engine
    from engine.profile.ops import Dims
    from engine.profile.project import projection
    from engine.profile.run import own_plan, profile_trace
    from engine.run.generate import run_trace
    from engine.run.request import APP_DEFAULTS
    from engine.schema.validate import read_trace
    engine = Engine.load(args.model, device=args.device, dtype=args.dtype)
    if args.machine:                 # one measurement per host: the lab's, where it names this host
        from engine.lab import host
        lab = json.loads(Path(args.machine).read_text(encoding="utf-8"))
        if not host.adopt(lab.get("host")):
            print(f"{args.machine} was measured on another host or device; measuring here", file=sys.stderr)
    if args.trace:
        trace = read_trace(Path(args.trace).read_bytes(), engine.limits)
    else:
        # the page's own settings (attention and lens watched), so "watching" is what the page pays; a
        # short run first, so one-off costs of a process's first run do not land in the step profiled
        settings = replace(APP_DEFAULTS, max_new_tokens=args.max_new_tokens, ignore_eos=True)
        run_trace(engine, args.prompt, replace(settings, max_new_tokens=2))
        trace = run_trace(engine, args.prompt, settings)
    result = profile_trace(engine, trace, args.step, **({"repeats": args.repeats} if args.repeats else {}))
    if args.project:
        result["projection"] = projection(Dims.of_config(engine.model.config), engine.info.id,
                                          result["phases"]["prefill"]["tokens"], result["phases"]["decode"]["keys"],
                                          own_plan(engine.model))
    text = json.dumps(result, ensure_ascii=False, indent=None if args.json else 2)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    if args.table:
        print(table(result))
    else:
        print(text)
    if not args.json:
        p, d = result["phases"]["prefill"], result["phases"]["decode"]
        print(f"prefill {p['tokens']} tokens: {p['forward_ms']:.1f} ms (roofline {p['predicted_ms']:.2f}); "
              f"decode step {result['decode_step']}: {d['forward_ms']:.1f} ms (roofline {d['predicted_ms']:.2f}); "
              f"hooks added {p['overhead_ms']:.1f} / {d['overhead_ms']:.1f} ms", file=sys.stderr)
    return 0
