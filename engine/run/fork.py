"""Forking a run: continue it from any step with another token, reusing the cached prefix.

A finished run keeps its KV cache on the server (`Prefixes`, a byte-bounded LRU). A fork at step
K with token T takes a copy of that cache cropped to the prompt + K generated tokens (nothing of
the prefix is recomputed), feeds T, and generates on: this is what prefix caching in vLLM and
RadixAttention in SGLang buy a server. Each branch keeps its own cache, so branches of branches
reuse theirs. A trace without a cache in memory (a file, an evicted run) has its prefix computed
once (`Branch.rebuilt_ms` says so); later branches reuse it.

`stream_fork` yields Events over a *view* of the branch (the parent lineage's first K steps, then
the branch's own), and returns a new Trace: the parent plus the branch. The trace it was given,
its steps and its cache are never changed, so visitors forking one shared run stay apart.
`measure_recompute` times the alternative: the same prefix recomputed from scratch.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timezone
from typing import Generator

import torch
from transformers import DynamicCache

from engine.schema.branches import MAX_BRANCHES, ROOT, find, lineage, view, watched_rows
from engine.model.clock import now_ms
from engine.errors import InvalidRequest
from engine.run.generate import Run
from engine.model.hooks import Capture
from engine.run.kv_cache import cache_bytes, cropped_copy, holds
from engine.run.prefixes import cache_key
from engine.run.record import Clocks, Event, last_of, make_step, ms3, summarize
from engine.run.request import check_settings
from engine.run.sampling import Choice, pick, warpers
from engine.schema.trace import Branch, Settings, Step, Trace


def prefix_ids(trace: Trace, steps: list[Step], at: int) -> list[int]:
    return [t.id for t in trace.prompt.tokens] + [s.id for s in steps[:at]]


class BranchRun(Run):
    """A Run that starts from a cropped copy of a cache, with the chosen token already in place.
    Its view's steps begin with the lineage's first `at` steps; the branch's own follow."""

    def __init__(self, engine, view_trace: Trace, ids: list[int], start: float, cancel: threading.Event,
                 cache: DynamicCache, copy_ms: float, forced: Step):
        super().__init__(engine, view_trace, ids, start, cancel)
        self.cache = cache
        # the rows go on from the lineage's, and count against the same cap (they are one view's rows)
        rows = view_trace.attention.steps if view_trace.attention is not None else []
        self.attention.on = self.attention.on and len(rows) == forced.index + 1
        self.attention.bytes = sum(r.nbytes for r in rows)
        self.kept.bytes = sum(len(st.hidden.data) for st in view_trace.steps if st.hidden is not None)
        self.reason = "cancelled"   # why the branch stopped; a branch closed early stays "cancelled"
        # bring the text decoder and the thinking tracker to where the lineage left them
        special = engine.token_bytes.special_ids
        for st in view_trace.steps:
            if st.id not in special:
                self.text.push(bytes.fromhex(st.bytes_hex))
            self.thinking.phase_of(engine.text_of(st.id) if st.id in special else st.text,
                                   st.phase if st.forced else None)
        forced.text = "" if forced.id in special else self.text.push(bytes.fromhex(forced.bytes_hex))
        forced.phase = self.thinking.phase_of(engine.text_of(forced.id) if forced.id in special else forced.text)
        view_trace.steps.append(forced)
        # the model's clock starts with the copy: it is the price of reuse, inside the branch's TTFT
        self.clock = copy_ms
        self.last_ready = now_ms(engine.device)

    def events(self) -> Generator[Event, None, Trace]:
        trace, s = self.trace, self.trace.settings
        self.engine._count_run(+1)
        try:
            yield Event("tokens", trace)
            reason = None
            if trace.steps[-1].id in self.engine.eos_ids and not s.ignore_eos:
                reason = "eos"
            elif len(trace.steps) >= s.max_new_tokens:
                reason = "max_tokens"
            self.reason = yield from self.decode(reason)
            trace.steps[-1].text += self.text.flush()
            yield Event("done", trace)
            return trace
        finally:
            self.engine._count_run(-1)


def stream_fork(engine, trace: Trace, at: int, token: int, parent: str = ROOT,
                max_new_tokens: int | None = None, settings: Settings | None = None,
                cancel: threading.Event | None = None) -> Generator[Event, None, Trace]:
    """Fork `parent` (ROOT: the run) at step `at` with `token`, one of that step's stored
    candidates. Checks everything before any model work (raises InvalidRequest); returns a
    generator of Events over the branch's view, whose return value is the new Trace (`trace`
    plus the branch, last in `branches`)."""
    engine.ensure_device()
    start = now_ms(engine.device)
    steps, chosen = check_fork(engine, trace, at, token, parent)
    # the branch watches what its lineage watched (attention rows, the lens's states), unless told otherwise
    base = settings or view(trace, parent).settings
    new = max_new_tokens if max_new_tokens is not None else base.max_new_tokens
    branch_settings = check_settings(dataclasses.replace(base, max_new_tokens=new), engine.limits)
    prefix = prefix_ids(trace, steps, at)
    if len(prefix) + 1 + new > engine.info.context_length:
        raise InvalidRequest(f"{len(prefix) + 1 + new:,} positions exceed the model's context of "
                             f"{engine.info.context_length:,}", "fork_context",
                             positions=len(prefix) + 1 + new, context=engine.info.context_length)
    cached, rebuilt_ms = kept_or_rebuilt(engine, trace, cache_key(trace, parent or ROOT), steps, len(prefix))
    begin = now_ms(engine.device)
    with engine.lock:
        cache = cropped_copy(engine.model.config, cached, len(prefix))
    copy_ms = now_ms(engine.device) - begin
    # the chosen token, in place without a pass: the copy is its time (the price of reuse)
    (rank, c), source = chosen, steps[at]
    choice = Choice(token, source.candidates, rank, c.p_model, c.p_final, source.entropy, source.entropy_model)
    # the chosen token comes from the pass that produced step `at`: its lens and attention row are that pass's
    forced = make_step(at, token, engine.text_of(token), engine.token_bytes.bytes_of(token), "", choice,
                       Clocks(ms=copy_ms, t_ms=copy_ms), len(prefix), cache_bytes(cache), forced=True,
                       lens=source.lens if branch_settings.logit_lens else None,
                       hidden=source.hidden if branch_settings.logit_lens else None)
    lineage_view = view(trace, parent)
    view_trace = dataclasses.replace(lineage_view, steps=[*steps[:at]], summary=None, branches=[],
                                     attention=watched_rows(lineage_view, at, branch_settings),
                                     observation=dataclasses.replace(lineage_view.observation)
                                     if lineage_view.observation else None,
                                     settings=dataclasses.replace(branch_settings, max_new_tokens=at + 1 + new))
    existing = {b.id for b in trace.branches}
    branch = Branch(id=next(f"b{i}" for i in range(1, 10_000) if f"b{i}" not in existing), parent=parent,
                    at=at, token=token, settings=branch_settings, reused_tokens=len(prefix),
                    copy_ms=ms3(copy_ms), rebuilt_ms=None if rebuilt_ms is None else ms3(rebuilt_ms),
                    created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    run = BranchRun(engine, view_trace, prefix + [token], start, cancel or threading.Event(), cache, copy_ms, forced)
    return _branch_events(engine, trace, run, branch)


def kept_or_rebuilt(engine, trace: Trace, name: str, steps: list[Step], positions: int):
    """The lineage's kept cache if it holds the first `positions`, else one computed from its tokens
    and kept (with the ms that took). A sliding-window layer keeps only its newest positions, so a
    model with such layers reuses a kept cache only where the fork's window is still in it, and
    otherwise computes the prefix up to the fork (a cache cannot be cropped back past its window)."""
    cached = engine.prefixes.get(name)
    if cached is not None and holds(cached, positions):
        return cached, None
    upto = positions - len(trace.prompt.tokens) if engine.info.sliding_layers else max(len(steps) - 1, 0)
    cached, rebuilt_ms = rebuild(engine, trace, steps, upto)
    engine.prefixes.keep(name, cached)
    return cached, rebuilt_ms


def check_fork(engine, trace: Trace, at: int, token: int, parent: str) -> tuple[list[Step], tuple]:
    """The lineage's steps and (rank, candidate) of `token` at step `at`, or an InvalidRequest
    saying why this trace cannot be forked there."""
    if trace.served is not None:
        raise InvalidRequest("a served trace cannot be forked here: its KV cache lives on the server",
                             "fork_served")
    if trace.model.id != engine.info.id or trace.model.vocab_size != engine.info.vocab_size:
        raise InvalidRequest(f"this trace was recorded with {trace.model.id}; load that model to fork it",
                             "fork_other_model", model=trace.model.id)
    if not trace.settings.use_cache:
        raise InvalidRequest("this run did not use a KV cache; there is no prefix to reuse", "fork_no_cache")
    steps = lineage(trace, parent)          # refuses a parent the trace does not hold
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(steps):
        raise InvalidRequest(f"step {at!r} is outside this run's steps 0..{len(steps) - 1}", "fork_step",
                             step=repr(at), last=len(steps) - 1)
    if len(trace.branches) >= MAX_BRANCHES:
        raise InvalidRequest(f"this trace already holds {MAX_BRANCHES} branches, the most one trace may hold",
                             "fork_full", n=MAX_BRANCHES)
    source = steps[at]
    chosen = next(((rank, c) for rank, c in enumerate(source.candidates) if c.id == token), None)
    if chosen is None:
        raise InvalidRequest(f"token {token!r} is not among step {at}'s {len(source.candidates)} stored "
                             "candidates; pick one of them", "fork_token", token=repr(token), step=at,
                             n=len(source.candidates))
    return steps, chosen


def _branch_events(engine, trace: Trace, run: BranchRun, branch: Branch):
    view_trace = run.trace
    try:
        for event in run.events():
            yield event
    finally:
        own = view_trace.steps[branch.at:]
        branch.steps = own
        # what the branch generated: the chosen token is given, not generated
        branch.summary = summarize(own[1:], run.reason, run.cache, own[0].t_ms if own else 0.0)
        branch.cache_bytes = cache_bytes(run.cache)
        if view_trace.attention is not None and branch.settings.attention:
            branch.attention = view_trace.attention.steps[branch.at + 1:]
            capped = view_trace.attention.steps_capped_at
            branch.attention_capped_at = capped if capped is not None and capped > branch.at else None
        capped = view_trace.observation.lens_capped_at if view_trace.observation else None
        branch.lens_capped_at = capped if capped is not None and capped > branch.at else None
        view_trace.summary = branch.summary
    forked = dataclasses.replace(trace, branches=[*trace.branches, branch])
    engine.prefixes.keep(cache_key(forked, branch.id), run.cache)
    return forked


def run_fork(engine, trace: Trace, at: int, token: int, **kwargs) -> Trace:
    """The whole fork at once; returns the trace with the new branch last in `branches`."""
    return last_of(stream_fork(engine, trace, at, token, **kwargs))


def rebuild(engine, trace: Trace, steps: list[Step], upto: int) -> tuple[DynamicCache, float]:
    """A lineage's cache computed from its tokens (the prompt and its first `upto` generated steps;
    the last step is never read by a pass): one forward pass. Returns the cache and its time."""
    ids = prefix_ids(trace, steps, upto)
    cache = DynamicCache(config=engine.model.config)
    out = engine.forward(torch.tensor([ids]), cache, Capture())
    return cache, out.ms


def measure_recompute(engine, trace: Trace, branch_id: str) -> Trace:
    """Time the branch's first generated token the way a server without prefix caching would get
    it: the prompt, the lineage's first `at` tokens and the chosen token in one fresh pass, then
    the choice. Same engine, same settings; the branch keeps the time and the token it gave (for
    a greedy branch it must be the branch's own first token). Returns a new Trace."""
    branch = find(trace, branch_id)
    ids = prefix_ids(trace, lineage(trace, branch.parent), branch.at) + [branch.token]
    s = branch.settings
    start = now_ms(engine.device)
    out = engine.forward(torch.tensor([ids]), DynamicCache(config=engine.model.config), Capture())
    generator = torch.Generator(device=engine.device).manual_seed(s.seed)
    token, _ = pick(out.logits, s, warpers(s.temperature, s.top_k, s.top_p), torch.tensor([ids]), generator)
    ms = now_ms(engine.device) - start
    measured = dataclasses.replace(branch, recompute_ms=ms3(ms), recompute_token=int(token))
    return dataclasses.replace(trace, branches=[measured if b.id == branch_id else b for b in trace.branches])
