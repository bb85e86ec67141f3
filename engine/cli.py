"""Command line: `python -m engine trace|bench ...`; more commands, one file each, in engine/commands/."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from engine import commands
from engine.commands import load as load_command, model_args
from engine.bench.evaluation import BUDGETS
from engine.errors import EngineError, InvalidRequest
from engine.schema.lab import EXPERIMENTS
from engine.schema.validate import read_trace, validate


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m engine", description="Token by Token inference engine")
    sub = top.add_subparsers(dest="command", required=True)

    t = sub.add_parser("trace", help="run one prompt and write its Trace as JSON")
    model_args(t)
    t.add_argument("--prompt", required=True)
    t.add_argument("--max-new-tokens", type=int, default=64)
    t.add_argument("--temperature", type=float, default=0.0)
    t.add_argument("--top-k", type=int, default=0)
    t.add_argument("--top-p", type=float, default=1.0)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--attention", action="store_true", help="capture attention maps and rows")
    t.add_argument("--logit-lens", action="store_true", help="record each layer's top guess per step")
    t.add_argument("--no-cache", action="store_true", help="recompute the whole sequence every step")
    t.add_argument("--no-chat-template", action="store_true", help="send the raw prompt")
    t.add_argument("--mode", choices=["normal", "reasoning"], default="normal")
    t.add_argument("--thinking-budget", type=int, default=0,
                   help="max thinking tokens in reasoning mode (0: normal mode)")
    t.add_argument("--out", required=True, help="where to write the trace JSON")
    t.add_argument("--endpoint", default=None,
                   help="trace a served model instead: the server's base URL (vLLM, SGLang, TGI, llama.cpp, "
                        "Ollama); --model is then the name the server serves")
    t.add_argument("--api", default="completions", help="the server's API: completions or chat (OpenAI-style)")
    t.add_argument("--token-ids", action="store_true", help="ask for token ids (vLLM's return_tokens_as_token_ids)")
    t.add_argument("--extra", default=None,
                   help='JSON object added to the request, e.g. \'{"repeat_penalty": 1.0}\' for llama-cpp-python')
    t.add_argument("--tokenizer", default=None,
                   help="a local copy of the served model (hub id, folder or 'embedded'): its tokenizer maps "
                        "token texts to ids and its config describes the model")

    b = sub.add_parser("bench", help="engine vs model.generate, measured in one run")
    model_args(b)
    b.add_argument("--new-tokens", type=int, default=64)
    b.add_argument("--repeats", type=int, default=3)
    b.add_argument("--json", action="store_true", help="print JSON only")
    b.add_argument("--no-fast", action="store_true",
                   help="leave out the compiled decode path (its two graphs take minutes to compile)")

    lab = sub.add_parser("lab", help="acceleration lab: KV cache, attention kernels, weight formats, roofline, "
                                          "batching, verifying k tokens, speculative decoding")
    model_args(lab)
    lab.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (tests)")
    lab.add_argument("--only", default=None,
                     help="comma list of experiments: " + ",".join(EXPERIMENTS))
    lab.add_argument("--draft", default=None,
                     help="a draft model for speculative decoding, with the model's vocabulary (hub id or folder; "
                          "'embedded' drafts with the model itself, which shows the mechanism, not a gain)")
    lab.add_argument("--weight-formats", default=None,
                     help="comma list for the weights experiment, fp32 first: fp32,bf16,int8,nf4 (default) and "
                          "the opt-in bf16-int8 (int8 weight-only, bf16 activations)")
    lab.add_argument("--json", action="store_true", help="print JSON only")

    f = sub.add_parser("fork", help="continue a trace from step K with another token, reusing the cached prefix")
    model_args(f)
    f.add_argument("--trace", help="the trace JSON to fork (python -m engine trace --out ...)")
    f.add_argument("--step", type=int, help="the step to replace (0 = the first generated token)")
    f.add_argument("--token", type=int, help="the token id to put there: one of that step's stored candidates")
    f.add_argument("--parent", default="", help="fork a branch of the trace instead of the run (its id, e.g. b1)")
    f.add_argument("--max-new-tokens", type=int, default=None, help="tokens after the chosen one (default: the run's)")
    f.add_argument("--out", help="where to write the trace with its new branch")
    f.add_argument("--bench", action="store_true",
                   help="measure instead: branch TTFT with the reused cache vs recomputing the prefix")
    f.add_argument("--json", action="store_true", help="print JSON only")

    ev = sub.add_parser("eval", help="accuracy and time on the built-in questions at several thinking budgets")
    model_args(ev)
    ev.add_argument("--budgets", default=",".join(map(str, BUDGETS)),
                    help="comma list of thinking budgets (0 = normal mode)")
    ev.add_argument("--limit", type=int, default=None, help="use only the first N questions")
    ev.add_argument("--json", action="store_true", help="print JSON only")
    for command in commands.modules():        # one file each in engine/commands/
        command.add_arguments(sub.add_parser(command.NAME, help=command.HELP))
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    from engine.model.core import Engine   # heavy imports after argument parsing, so --help is instant
    try:
        if args.command == "trace" and args.endpoint:
            return _served(args)
        extra = {c.NAME: c for c in commands.modules()}.get(args.command)
        if extra is not None:
            return extra.run(args)
        engine = Engine.load(args.model, device=args.device, dtype=args.dtype,
                             attn_implementation=args.attn)
        if args.command == "trace":
            return _trace(engine, args)
        if args.command == "fork" and not args.bench:
            return _fork(engine, args)
        if args.command == "lab":
            from engine.lab import run_lab
            only = args.only.split(",") if args.only else None
            draft = _draft(engine, args)
            formats = tuple(f.strip() for f in args.weight_formats.split(",")) if args.weight_formats else None
            result = run_lab(engine, quick=args.quick, only=only, draft=draft, weight_formats=formats)
        elif args.command == "fork":
            from engine.bench.fork import fork_bench
            result = fork_bench(engine)
        elif args.command == "eval":
            from engine.bench.evaluation import evaluate
            budgets = [int(b) for b in args.budgets.split(",")]
            result = evaluate(engine, budgets, limit=args.limit)
        else:
            from engine.bench.speed import PROMPT, bench
            result = bench(engine, new_tokens=args.new_tokens, repeats=args.repeats)
            if not args.no_fast:
                from engine.bench.compiled import fast_figures
                result.update(fast_figures(engine, PROMPT, args.new_tokens, args.repeats,
                                           llamacpp_tok_s=result.get("llamacpp_decode_tok_s")))
        print(json.dumps(result, indent=None if args.json else 2))
        return 0
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _draft(engine, args):
    """The draft engine for the speculative experiment: the model itself when both name the
    embedded one, else a second load on the same device."""
    if not args.draft:
        return None
    from engine.model.core import Engine
    from engine.model.loading import resolve_source
    if resolve_source(args.draft) == resolve_source(args.model):
        return engine
    return Engine.load(args.draft, device=str(engine.device), dtype=args.dtype, attn_implementation=args.attn)


def _trace(engine, args) -> int:
    from engine.run.generate import run_trace
    from engine.schema.trace import Settings
    settings = Settings(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                        top_k=args.top_k, top_p=args.top_p, seed=args.seed, attention=args.attention,
                        logit_lens=args.logit_lens, use_cache=not args.no_cache,
                        chat_template=not args.no_chat_template, mode=args.mode,
                        thinking_budget=args.thinking_budget)
    from engine.model.lens import exported
    trace = run_trace(engine, args.prompt, settings)
    Path(args.out).write_text(exported(engine, trace).to_json(), encoding="utf-8")   # the lens computed now
    s = trace.summary
    print(f"{trace.prefill.tokens} prompt tokens, {s.new_tokens} new ({s.stop_reason}); "
          f"TTFT {s.ttft_ms:.0f} ms, TPOT {s.tpot_ms or 0:.1f} ms, {s.tokens_per_s:.1f} tok/s -> {args.out}",
          file=sys.stderr)
    print(trace.output_text)
    return 0


def _served(args) -> int:
    """A trace of a served model: no model is loaded here unless --tokenizer names one."""
    from engine.model.core import Engine
    from engine.served import endpoint, stream_served
    from engine.schema.trace import Settings
    if not args.model:
        raise InvalidRequest("name the served model with --model")
    where = endpoint(args.endpoint, args.model, api=args.api, token_ids=args.token_ids, extra=load_command.extra(args))
    local = Engine.load(args.tokenizer, device="cpu") if args.tokenizer else None
    settings = Settings(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed,
                        chat_template=not args.no_chat_template)
    events = stream_served(where, args.prompt, settings, local=local)
    try:
        while True:
            next(events)
    except StopIteration as done:
        trace = done.value
    Path(args.out).write_text(validate(trace).to_json(), encoding="utf-8")
    s = trace.summary
    print(f"{s.new_tokens} tokens from {where.name} ({s.stop_reason}); TTFT {s.ttft_ms or 0:.0f} ms, "
          f"TPOT {s.tpot_ms or 0:.1f} ms, E2EL {s.e2e_ms:.0f} ms (client side) -> {args.out}", file=sys.stderr)
    print(trace.output_text)
    return 0


def _fork(engine, args) -> int:
    """One branch from a trace file. No cache of that run is in this new process, so the prefix is
    computed once (reported as rebuilt); the branch then reuses it, and the same first token is
    also recomputed from scratch for comparison."""
    from engine.run.fork import measure_recompute, run_fork
    if args.trace is None or args.step is None or args.token is None or args.out is None:
        raise InvalidRequest("fork needs --trace, --step, --token and --out (or --bench)")
    try:
        text = Path(args.trace).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidRequest(f"cannot read {args.trace}: {exc.strerror}") from None
    trace = read_trace(text, engine.limits)
    forked = run_fork(engine, trace, args.step, args.token, parent=args.parent,
                      max_new_tokens=args.max_new_tokens)
    forked = measure_recompute(engine, forked, forked.branches[-1].id)
    Path(args.out).write_text(forked.to_json(), encoding="utf-8")
    b = forked.branches[-1]
    report = {"branch": b.id, "parent": b.parent or "run", "at": b.at, "token": b.token,
              "reused_tokens": b.reused_tokens, "rebuilt_ms": b.rebuilt_ms, "copy_ms": b.copy_ms,
              "ttft_reuse_ms": b.summary.ttft_ms, "ttft_recompute_ms": b.recompute_ms,
              "branch_cache_bytes": b.cache_bytes, "new_tokens": b.summary.new_tokens,
              "text": "".join(s.text for s in b.steps), "out": args.out}
    print(json.dumps(report, ensure_ascii=False, indent=None if args.json else 2))
    return 0
