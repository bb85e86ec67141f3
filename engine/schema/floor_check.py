"""A serving-floor file from outside, checked before anything draws it (like schema/validate.py
for traces): every count agrees with the lists it describes, every index points inside, every
lane's times run forward, and nothing is larger than a run on this host could make."""

from __future__ import annotations

from engine.environment import Limits
from engine.schema.floor import MODES, SOURCES, Floor
from engine.schema.validate import _between, _check

MAX_REQUESTS, MAX_FRAMES, MAX_TOKENS, MAX_MS = 256, 50_000, 8_192, 1e9
MAX_BLOCK_ID = 100_000_000


def read_floor(text: str | bytes, limits: Limits | None = None) -> Floor:
    """The one way a file becomes a Floor. Raises TraceFormatError naming the first bad field."""
    limits = limits or Limits()
    return check_floor(Floor.from_json(text, max_bytes=limits.max_upload_bytes))


def check_floor(f: Floor) -> Floor:
    n = len(f.lanes)
    _between(n, 1, MAX_REQUESTS, "floor.lanes")
    _check(f.settings.requests == n, "floor.settings.requests", f"says {f.settings.requests}, lanes hold {n}")
    _check(f.settings.source in SOURCES, "floor.settings.source", f"one of {', '.join(SOURCES)}")
    for i, lane in enumerate(f.lanes):
        _between(len(lane.id), 1, 32, f"floor.lanes[{i}].id")
    _between(f.cache.page_size, 1, 4_096, "floor.cache.page_size")
    _between(f.cache.num_blocks, 1, MAX_BLOCK_ID, "floor.cache.num_blocks")
    _between(f.cache.peak_blocks, 0, f.cache.num_blocks, "floor.cache.peak_blocks")
    _check(len(f.modes) == len(MODES), "floor.modes", f"expected {len(MODES)} ways, got {len(f.modes)}")
    _check(not f.texts or len(f.texts) == n, "floor.texts", "one text per lane")
    for i, mode in enumerate(f.modes):
        where = f"floor.modes[{i}]"
        _check(len(mode.ttft_ms) == n and len(mode.e2el_ms) == n, where, "one figure per request")
        _between(mode.wall_ms, 0, MAX_MS, f"{where}.wall_ms")
        _between(mode.tokens, 0, n * MAX_TOKENS, f"{where}.tokens")
        for v in mode.ttft_ms + mode.e2el_ms:
            _between(v, -MAX_MS, MAX_MS, f"{where} times")
        if mode.load is not None:          # the verdict quotes these
            check_load(mode.load, f"{where}.load")
    for i, lane in enumerate(f.lanes):
        _lane(lane, f"floor.lanes[{i}]", f.model.vocab_size)
    _between(len(f.frames), 0, MAX_FRAMES, "floor.frames")
    for i, frame in enumerate(f.frames):
        _frame(frame, f"floor.frames[{i}]", n, f.cache.num_blocks)
    return f


def check_load(load, where: str) -> None:
    """A HostLoad from a file: shares within 0..1, a plausible machine."""
    _between(load.cpus, 1, 100_000, f"{where}.cpus")
    _between(load.others, 0, 1, f"{where}.others")
    _between(load.steal, 0, 1, f"{where}.steal")
    _between(load.load_1m, 0, 1e6, f"{where}.load_1m")
    _between(load.seconds, 0, MAX_MS, f"{where}.seconds")


def _lane(lane, where: str, vocab: int) -> None:
    _between(len(lane.tokens), 1, MAX_TOKENS, f"{where}.tokens")
    _check(len(lane.token_ms) == len(lane.tokens), f"{where}.token_ms", "one time per token")
    _between(lane.prompt_tokens, 1, 1_000_000, f"{where}.prompt_tokens")
    _between(lane.reused_tokens, 0, lane.prompt_tokens, f"{where}.reused_tokens")
    times = [lane.arrival_ms, lane.start_ms, *lane.token_ms]
    for v in times + [lane.end_ms]:
        _between(v, -MAX_MS, MAX_MS, f"{where} times")
    _check(all(a <= b for a, b in zip(times, times[1:])), where, "times must not run backwards")
    for t in lane.tokens:
        _between(t, 0, max(vocab - 1, 0), f"{where}.tokens")
    for c in lane.chunks:
        _check(len(c) == 3 and c[0] <= c[1] and c[2] >= 0, f"{where}.chunks", "each is [start, end, tokens]")


def _frame(frame, where: str, lanes: int, blocks: int) -> None:
    _check(frame.start_ms <= frame.end_ms, where, "ends before it starts")
    _check(len(frame.tables) == lanes, f"{where}.tables", "one block table per lane")
    for entry in frame.batch:
        _check(len(entry) == 3 and 0 <= entry[0] < lanes and entry[1] >= 0, f"{where}.batch",
               "each is [lane, query tokens, prefill]")
    for table in frame.tables:
        _between(len(table), 0, blocks, f"{where}.tables")
        for b in table:
            _between(b, 0, MAX_BLOCK_ID, f"{where}.tables")
    for pair in frame.refs:
        _check(len(pair) == 2 and 0 <= pair[0] <= MAX_BLOCK_ID and 2 <= pair[1] <= lanes, f"{where}.refs",
               "each is [block, holders]")
    _between(frame.free_blocks, 0, blocks, f"{where}.free_blocks")
    for w in frame.waiting:
        _between(w, 0, lanes - 1, f"{where}.waiting")
