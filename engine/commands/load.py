"""`python -m engine load`: concurrent streams against a served model (no model is loaded here)."""

from __future__ import annotations

import json
import sys

from engine.environment import slo_ms
from engine.errors import InvalidRequest
from engine.served.load import BUDGET_S, LEVELS, MAX_TOKENS, ROUNDS

NAME = "load"
HELP = "concurrent streams against a served model: TTFT, TPOT, ITL, throughput, goodput"


def add_arguments(ld) -> None:
    ld.add_argument("--endpoint", required=True, help="the server's base URL")
    ld.add_argument("--model", required=True, help="the model name the server serves")
    ld.add_argument("--api", default="completions", help="completions, chat, llamacpp, sglang, tgi or ollama")
    ld.add_argument("--prompt", default="Explain in two sentences why the sky is blue.")
    ld.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    ld.add_argument("--levels", default=",".join(map(str, LEVELS)), help="concurrent streams per level (at most 8)")
    ld.add_argument("--rounds", type=int, default=ROUNDS, help="waves per level")
    ld.add_argument("--budget-s", type=float, default=BUDGET_S, help="seconds the whole sweep may take")
    ttft, tpot = slo_ms()
    ld.add_argument("--slo-ttft-ms", type=float, default=ttft, help="default: TBT_SLO_TTFT_MS, as the page")
    ld.add_argument("--slo-tpot-ms", type=float, default=tpot, help="default: TBT_SLO_TPOT_MS, as the page")
    ld.add_argument("--extra", default=None, help="JSON object added to every request")
    ld.add_argument("--json", action="store_true", help="print JSON only")


def extra(args) -> dict | None:
    """--extra: a JSON object added to each request (also read by `trace --endpoint`)."""
    try:
        return json.loads(args.extra) if args.extra else None
    except ValueError:
        raise InvalidRequest("--extra must be a JSON object") from None


def run(args) -> int:
    from engine.served import endpoint
    from engine.served.load import Slo, load_sweep
    where = endpoint(args.endpoint, args.model, api=args.api, extra=extra(args))
    try:
        levels = [int(c) for c in args.levels.split(",")]
    except ValueError:
        raise InvalidRequest("--levels is a comma list of integers") from None
    result = load_sweep(where, args.prompt, args.max_tokens, levels, args.rounds,
                        Slo(args.slo_ttft_ms, args.slo_tpot_ms), budget_s=args.budget_s,
                        progress=lambda f, text: print(f"{f:.0%} {text}", file=sys.stderr))
    print(json.dumps(result, indent=None if args.json else 2))
    return 0
