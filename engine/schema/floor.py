"""The serving floor's file: one workload served three ways, as measured (no torch).

    python -m engine floor --out floor.json     (engine/floor/serve.py writes it)

Times are milliseconds from the first arrival, on the job's pause-aware clock (engine/model/clock.py).
`lanes` are the continuous-batching run's requests as transformers' manager served them: arrival,
the step that first scheduled them, each prefill chunk, each token's timestamp (the library's
`record_timestamps`), the end. `frames` are the manager's steps: which requests were in the batch
with how many query tokens, and the paged cache's block tables and shared blocks' reference
counts as its allocator held them when the step ran. `modes` sum up the same requests served
continuously, one at a time (`generate`, first come first served) and as one static batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import with_config

from engine.errors import TraceFormatError
from engine.schema.serial import FILE, read_json, to_plain
from engine.schema.load import HostLoad
from engine.schema.specs import ModelInfo

FORMAT, VERSION = "tbt-floor", 1
SOURCES = ("workload", "branches")
MODES = ("continuous", "one_at_a_time", "static")
ARRIVALS = ("burst", "poisson")
SCHEDULERS = ("fifo", "prefill_first")


@dataclass
class FloorSettings:
    requests: int = 8
    arrival: str = "poisson"       # "burst": all at once; "poisson": exponential gaps at `rate` per second
    rate: float = 4.0
    prompt_tokens: int = 96        # each request's prompt, chat template included (about)
    shared_prefix: int = 64        # tokens of the same system prompt at the start of every request (0: none)
    new_tokens: int = 24
    page_size: int = 16            # tokens per page: a block holds this many positions of every layer
    num_blocks: int = 128
    max_batch_tokens: int = 128    # query tokens per step: longer prompts are prefilled in chunks
    scheduler: str = "fifo"        # or "prefill_first"
    seed: int = 0
    source: str = "workload"       # or "branches": a forked run's lineages as requests (engine/floor/workload.branch_prompts)


@dataclass
class Lane:
    """One request of the continuous run."""
    id: str
    prompt_tokens: int
    reused_tokens: int             # prompt positions found in shared blocks (never prefilled)
    arrival_ms: float
    start_ms: float                # the step that first scheduled it (waiting before)
    end_ms: float
    chunks: list[list[float]]      # prefill chunks: [start_ms, end_ms, query tokens]
    token_ms: list[float]          # each generated token's timestamp
    tokens: list[int]
    same_as_generate: bool         # its tokens equal its own `generate` (greedy)

    @property
    def ttft_ms(self) -> float:
        return self.token_ms[0] - self.arrival_ms

    @property
    def e2el_ms(self) -> float:
        return self.token_ms[-1] - self.arrival_ms

    @property
    def tpot_ms(self) -> float | None:
        n = len(self.token_ms)
        return (self.token_ms[-1] - self.token_ms[0]) / (n - 1) if n > 1 else None


@dataclass
class Frame:
    """One step of the manager."""
    start_ms: float
    end_ms: float
    batch: list[list[int]]         # [lane index, query tokens, 1 if prefill else 0]
    tables: list[list[int]]        # per lane index: its block ids ([] when it holds none)
    refs: list[list[int]]          # [block id, reference count] for every block held by more than one request
    free_blocks: int
    waiting: list[int]             # lane indices that had arrived and were not yet scheduled


@dataclass
class Mode:
    """The workload served one way: per-request figures in lane order, and the totals."""
    wall_ms: float                 # first arrival to last token
    tokens: int
    ttft_ms: list[float]
    e2el_ms: list[float]
    memory_bytes: int              # KV memory this way held at its peak (read from the cache objects)
    memory_note: str               # what `memory_bytes` counts
    load: HostLoad | None = None   # how busy the machine was while this way ran (engine/lab/host.py)

    @property
    def throughput(self) -> float:
        return self.tokens / (self.wall_ms / 1000.0) if self.wall_ms > 0 else 0.0


@dataclass
class CacheFacts:
    page_size: int
    num_blocks: int
    bytes_per_block: int           # the allocator's, for every layer's K and V
    peak_blocks: int               # distinct blocks held at once, at most
    block_steps: int               # block-steps held (sum over frames): what sharing saves


@with_config(FILE)              # read by pydantic, strict (engine/schema/serial.py)
@dataclass
class Floor:
    model: ModelInfo
    settings: FloorSettings
    created: str
    cache: CacheFacts
    lanes: list[Lane]
    frames: list[Frame]
    modes: list[Mode]              # in MODES order
    unshared: CacheFacts | None = None   # the continuous run again with block sharing off (shared prefix only)
    texts: list[str] = field(default_factory=list)   # each lane's answer
    format: str = FORMAT
    version: int = VERSION

    def mode(self, name: str) -> Mode:
        return self.modes[MODES.index(name)]

    def decode_steps(self) -> dict[int, list[float]]:
        """What a decode-only step (no prompt in the batch) took, in ms, by the requests it decoded."""
        steps: dict[int, list[float]] = {}
        for f in self.frames:
            if f.batch and not any(prefill for _, _, prefill in f.batch):
                steps.setdefault(len(f.batch), []).append(f.end_ms - f.start_ms)
        return dict(sorted(steps.items()))

    def to_json(self) -> str:
        return json.dumps(to_plain(self), ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes, max_bytes: int) -> Floor:
        return read_json(cls, text, max_bytes, header=ours, keys=("format", "version"), path="floor")


def ours(data):
    """The file's header, read before its fields: a file of another format or version is not ours."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise TraceFormatError(f"not a serving-floor file (format {FORMAT!r}, version {VERSION})",
                               "floor_not_ours")
