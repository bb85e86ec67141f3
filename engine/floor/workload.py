"""The workload: its settings checked, each request's prompt as token ids, and when each arrives.

Every request is a chat prompt: a system message, then a question and some context. With a shared
prefix, every system message is the same passage (`shared_prefix` tokens: what a deployment's
system prompt is); without, each request's system message is its own. The rest of the prompt
differs per request, so only the prefix can ever be shared.
"""

from __future__ import annotations

import math
import random

from engine.environment import Limits
from engine.errors import InvalidRequest
from engine.schema.floor import ARRIVALS, SCHEDULERS, FloorSettings

QUESTIONS = (
    "What is the capital of France?", "Name three fruits that grow on trees.", "Why is the sky blue?",
    "How many legs does a spider have?", "What do bees make?", "Say hello in Spanish.",
    "What is two plus two?", "Name a planet with rings.", "What is the boiling point of water?",
    "Who wrote Romeo and Juliet?", "What colour are most leaves?", "How many days are in a week?",
    "What is the largest ocean?", "Name a musical instrument with strings.", "What do cows drink?",
    "What is the opposite of hot?",
)
SYSTEM = ("You are the assistant of a small supermarket. The store opens at eight and closes at nine. Fresh bread "
          "arrives every morning, the fruit aisle is restocked at noon, and customers may return any item within "
          "thirty days with a receipt. Answer briefly and politely. ")
CONTEXT = ("Apples, pears and plums are on offer this week. The bakery sells rye, wheat and oat bread. Milk and "
           "cheese are in the cold aisle at the back. Parking is free for the first hour. ")
MIN_PAGE, MAX_PAGE = 4, 256            # transformers' paged cache needs at least 4 tokens a page


def _between(name: str, value, lo, hi) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise InvalidRequest(f"{name} must be between {lo} and {hi} (got {value!r})", "floor_between",
                             name=name, lo=lo, hi=hi, got=repr(value)[:20])


def check(s: FloorSettings, limits: Limits, bytes_per_token: int, longest: int | None = None) -> None:
    """Refuse a workload before any model work: each setting in its range, the cache within the
    host's cap, and every request able to fit in the cache on its own. `longest`: the longest prompt
    of a workload given as token ids (a fork tree's lineages), instead of `prompt_tokens`."""
    _between("requests", s.requests, 1, limits.floor_max_requests)
    if s.arrival not in ARRIVALS:
        raise InvalidRequest(f"arrival must be one of {', '.join(ARRIVALS)}", "floor_choice", name="arrival",
                             choices=", ".join(ARRIVALS))
    if s.scheduler not in SCHEDULERS:
        raise InvalidRequest(f"scheduler must be one of {', '.join(SCHEDULERS)}", "floor_choice",
                             name="scheduler", choices=", ".join(SCHEDULERS))
    _between("rate", s.rate, 0.1, 100)
    if longest is None:
        _between("prompt_tokens", s.prompt_tokens, 32, 1024)
        _between("shared_prefix", s.shared_prefix, 0, s.prompt_tokens - 24)
    else:
        _between("prompt_tokens", longest, 1, 2048)
    _between("new_tokens", s.new_tokens, 1, 256)
    _between("page_size", s.page_size, MIN_PAGE, MAX_PAGE)
    _between("max_batch_tokens", s.max_batch_tokens, 16, 8192)
    _between("seed", s.seed, 0, 2**31 - 1)
    _between("num_blocks", s.num_blocks, 1, 1_000_000)
    block = s.page_size * bytes_per_token
    if s.num_blocks * block > limits.floor_max_kv_bytes:
        mb, cap = f"{s.num_blocks * block / 1e6:,.0f}", f"{limits.floor_max_kv_bytes / 1e6:,.0f}"
        raise InvalidRequest(f"{s.num_blocks} blocks of {s.page_size} tokens take {mb} MB; this host allows "
                             f"{cap} MB", "floor_cache_too_big", blocks=s.num_blocks, mb=mb, cap=cap)
    prompt = longest if longest is not None else s.prompt_tokens + 32           # 32: the template's slack
    need = math.ceil((prompt + s.new_tokens) / s.page_size)
    if s.num_blocks < need:
        raise InvalidRequest(f"one request needs up to {need} blocks of {s.page_size} tokens; the cache has "
                             f"{s.num_blocks}", "floor_cache_too_small", need=need, blocks=s.num_blocks)


def arrivals(s: FloorSettings) -> list[float]:
    """Seconds after the first arrival: all at 0 (a burst), or exponential gaps at `rate` per second."""
    if s.arrival == "burst":
        return [0.0] * s.requests
    rng, at, times = random.Random(s.seed), 0.0, []
    for _ in range(s.requests):
        times.append(at)
        at += rng.expovariate(s.rate)
    return times


def prompts(tokenizer, s: FloorSettings) -> list[list[int]]:
    """Each request's chat prompt as token ids, about `prompt_tokens` long."""
    shared = _cut(tokenizer, SYSTEM * 40, s.shared_prefix) if s.shared_prefix else ""
    out = []
    for i in range(s.requests):
        system = shared or f"Request {i + 1}. " + SYSTEM[i % 7 * 10:]
        question = QUESTIONS[i % len(QUESTIONS)]
        base = _template(tokenizer, system, question)
        room = max(s.prompt_tokens - len(base), 0)
        context = _cut(tokenizer, CONTEXT[i % 5 * 20:] + CONTEXT * 60, room)
        out.append(_template(tokenizer, system, f"{context}\n{question}" if context else question))
    return out


def _cut(tokenizer, text: str, tokens: int) -> str:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"][:tokens]
    return tokenizer.decode(ids) if ids else ""


def _template(tokenizer, system: str, user: str) -> list[int]:
    if not getattr(tokenizer, "chat_template", None):        # a base model: the text as it is
        return [int(i) for i in tokenizer(f"{system}\n{user}\n")["input_ids"]]
    ids = tokenizer.apply_chat_template([{"role": "system", "content": system}, {"role": "user", "content": user}],
                                        add_generation_prompt=True, tokenize=True, return_dict=False)
    return [int(i) for i in ids]


def branch_prompts(tree) -> tuple[list[str], list[list[int]]]:
    """A forked run's lineages as requests (`tree`: a Trace with branches): the run and each branch,
    each its prompt plus its own steps up to one past the last fork. They share the prompt and the
    steps before each fork, as the fork chapter's cache copies do. Names: "run", "b1", ..."""
    from engine.schema.branches import ROOT, lineage
    if not tree.branches:
        raise InvalidRequest("this run has no branches: fork it first (Decode chapter)", "floor_no_branches")
    upto = max(b.at for b in tree.branches) + 1
    prompt = [t.id for t in tree.prompt.tokens]
    names = ["run", *(b.id for b in tree.branches)]
    return names, [prompt + [s.id for s in lineage(tree, ROOT if n == "run" else n)[:upto]] for n in names]
