"""`python -m engine floor`: one workload served continuously, one at a time and as a static batch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.commands import model_args
from engine.schema.floor import FloorSettings

NAME = "floor"
HELP = "the serving floor: many requests through continuous batching and a paged KV cache vs one at a time"
D = FloorSettings()


def add_arguments(p) -> None:
    model_args(p, attn=False)
    p.add_argument("--requests", type=int, default=D.requests)
    p.add_argument("--rate", type=float, default=D.rate, help="Poisson arrivals per second (0: all at once)")
    p.add_argument("--prompt-tokens", type=int, default=D.prompt_tokens, help="each prompt's length, about")
    p.add_argument("--shared-prefix", type=int, default=D.shared_prefix,
                   help="tokens of one system prompt every request starts with (0: each its own)")
    p.add_argument("--new-tokens", type=int, default=D.new_tokens)
    p.add_argument("--page-size", type=int, default=D.page_size, help="tokens per KV block")
    p.add_argument("--blocks", type=int, default=D.num_blocks, help="KV blocks in the paged cache")
    p.add_argument("--max-batch-tokens", type=int, default=D.max_batch_tokens, help="query tokens per step")
    p.add_argument("--scheduler", default=D.scheduler, help="fifo or prefill_first")
    p.add_argument("--seed", type=int, default=D.seed, help="the arrival times' seed")
    p.add_argument("--branches", default=None, metavar="TRACE",
                   help="serve a forked trace's lineages (the run and each branch) as the requests, all at once")
    p.add_argument("--out", default=None, help="write the serving-floor file here (the page can show it)")
    p.add_argument("--json", action="store_true", help="print JSON only")


def run(args) -> int:
    from engine.floor.figures import figures
    from engine.floor.serve import run_floor
    from engine.model.core import Engine
    engine = Engine.load(args.model, device=args.device, dtype=args.dtype)
    given = {}
    if args.branches:                   # a fork tree's lineages instead of the workload
        from engine.floor.workload import branch_prompts
        from engine.schema.validate import read_trace
        names, inputs = branch_prompts(read_trace(Path(args.branches).read_bytes(), engine.limits))
        given = {"inputs": inputs, "names": names}
    data = run_floor(engine, **given, progress=None if args.json else lambda f, t="": print(f"{f:.0%} {t}", file=sys.stderr),
                     requests=args.requests, arrival="poisson" if args.rate > 0 else "burst",
                     rate=args.rate if args.rate > 0 else D.rate, prompt_tokens=args.prompt_tokens,
                     shared_prefix=args.shared_prefix, new_tokens=args.new_tokens, page_size=args.page_size,
                     num_blocks=args.blocks, max_batch_tokens=args.max_batch_tokens, scheduler=args.scheduler,
                     seed=args.seed)
    if args.out:
        Path(args.out).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    result = figures(data) | ({"out": args.out} if args.out else {})
    print(json.dumps(result, ensure_ascii=False, indent=None if args.json else 2))
    return 0
