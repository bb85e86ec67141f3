"""The Trace: everything one run measured, as a tree of dataclasses that round-trips through JSON.

One Trace flows engine -> viz -> app -> JSON download -> JSON upload -> viz again, so this module
depends on nothing but the standard library, numpy and pydantic (viz imports it without torch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import with_config

from engine.errors import TraceFormatError
from engine.schema.packed import Hidden, PackedRows
from engine.schema.serial import FILE, read_json, to_plain
from engine.schema.specs import ModelInfo

SCHEMA = "token-by-token/trace@3"
# trace@1 (before the honest clocks): step times were wall time, watching and waiting included.
# trace@2: no branches, no run id. Such files still load; their new fields keep the defaults below.
READABLE = ("token-by-token/trace@1", "token-by-token/trace@2", SCHEMA)
# why a run stopped: its end-of-sequence token, its budget, a stop string, cut off, a step not run in time
STOP_REASONS = ("eos", "max_tokens", "stop", "cancelled", "timeout")


@dataclass
class Settings:
    max_new_tokens: int = 64
    temperature: float = 0.0    # 0 means greedy
    top_k: int = 0              # 0 means off
    top_p: float = 1.0          # 1 means off
    seed: int = 0
    use_cache: bool = True
    chat_template: bool = True
    mode: str = "normal"        # "normal" | "reasoning"
    thinking_budget: int = 0
    answer_cue: bool = False    # start every answer with the answer cue, even in normal mode (evaluation)
    attention: bool = False     # capture attention maps/rows
    logit_lens: bool = False    # top guess of every layer at every step (kept in the run, computed on view)
    ignore_eos: bool = False    # keep generating past end-of-sequence (benchmarks)
    stop: list[str] = field(default_factory=list)
    top_candidates: int = 20    # candidates stored per step


@dataclass
class PromptToken:
    id: int
    text: str                   # printable form; a byte fragment shows as its hex bytes, e.g. "<E4 BB>"
    bytes_hex: str              # the token's raw bytes, hex
    start: int                  # span of characters in the templated text that this token touches
    end: int
    fragment: bool              # True when the token holds only part of a multi-byte character
    special: bool               # a special/added token such as <|im_start|>


@dataclass
class Prompt:
    raw: str
    templated: str
    tokens: list[PromptToken]
    raw_token_count: int        # tokens of the raw text alone, without the chat template

    def characters(self) -> list[tuple[str, list[int]]]:
        """Every character of the templated text with the indices of the tokens that form it."""
        owners: list[list[int]] = [[] for _ in self.templated]
        for i, tok in enumerate(self.tokens):
            for c in range(tok.start, tok.end):
                owners[c].append(i)
        return list(zip(self.templated, owners))


@dataclass
class Prefill:
    tokens: int
    tokenize_ms: float
    ms: float                   # the single forward pass over all prompt tokens
    tokens_per_s: float


@dataclass
class Candidate:
    id: int
    text: str
    logit: float
    p_model: float              # softmax of the raw logits (before temperature/top-k/top-p)
    p_final: float              # probability after the sampling transforms (what was sampled from)


@dataclass
class LensGuess:
    layer: int                  # 0-based decoder layer whose output was read
    id: int
    text: str
    p: float


@dataclass
class Step:
    index: int
    id: int
    token: str                  # printable form of the token (hex for byte fragments)
    text: str                   # characters this token completed (may be "" for a partial character)
    bytes_hex: str
    phase: str                  # "answer" | "thinking"
    # Times are the model's own (trace@2): the forward pass and the sampling, without the cost of
    # watching (observe_ms) or waiting (wait_ms). Wall time of a step = ms + observe_ms + wait_ms.
    ms: float                   # model time of this step (step 0: tokenize + prefill + sample = TTFT)
    t_ms: float                 # model clock at this token: request start -> this token, waits and watching left out
    forward_ms: float           # the forward pass that produced this token's logits
    candidates: list[Candidate]
    chosen_rank: int            # rank of the chosen token by raw logit (0 = top)
    chosen_p_model: float
    chosen_p_final: float
    entropy: float              # nats, of the final distribution that was sampled from
    entropy_model: float        # nats, of the model's own distribution
    kv_tokens: int              # positions held in the KV cache after this step's forward
    kv_bytes: int               # bytes of those cache tensors, read from the tensors
    forced: bool = False        # inserted by the engine (e.g. a forced closing delimiter), not sampled
    lens: list[LensGuess] | None = None
    observe_ms: float = 0.0     # watching this step: attention capture, logit lens, candidates, packing
    wait_ms: float = 0.0        # outside this run: another run's pass, the lab, a paused reader
    # A sampled step (temperature > 0, not forced): how many tokens of the whole vocabulary the real
    # top-k/top-p left to sample from, and their share of the distribution top-p cut (after
    # temperature and top-k). None when greedy or forced.
    kept_tokens: int | None = None
    kept_mass: float | None = None
    hidden: Hidden | None = None    # the lens's input until the lens is computed


@dataclass
class Attention:
    """Captured attention. Each row is a probability distribution over key positions."""
    prefill_tokens: int                     # prompt positions the prefill maps cover
    prefill_capped: bool                    # True when the prompt was longer than prefill_tokens
    prefill: list[PackedRows]               # one per layer: [heads, n, n]
    steps: list[PackedRows]                 # one per step: [layers, heads, keys] of the query that produced it
    steps_capped_at: int | None = None      # rows stopped being stored from this step on (size cap)


@dataclass
class Summary:
    ttft_ms: float | None       # request start -> first token ready; None if no token was produced
    tpot_ms: float | None       # (e2e - ttft) / (new_tokens - 1); None with fewer than 2 tokens
    e2e_ms: float
    tokens_per_s: float         # new_tokens / e2e
    new_tokens: int
    stop_reason: str            # one of STOP_REASONS
    kv_bytes_final: int
    thinking_tokens: int = 0
    answer_tokens: int = 0
    time_to_first_answer_ms: float | None = None
    observe_ms: float = 0.0         # all steps' watching cost, kept apart from the model's times above
    wait_ms: float = 0.0            # all steps' waits
    wall_ms: float | None = None    # request start -> last token on the wall clock (= e2e + observe + wait)


@dataclass
class Observation:
    """How the run was watched, so a reader knows what produced the numbers."""
    kernel: str                 # attention kernel that computed the outputs: "sdpa", "eager", ...
    attention: str | None       # "sdpa-capture" (rows recomputed beside SDPA), "eager-hooks", or None
    logit_lens: bool
    # the decode steps' path: "eager", or "compiled" (engine/compiled/fast.py: a torch.compile'd step over a
    # static cache of `static_cache_tokens` slots; its attention rows are part of the graph)
    decode: str = "eager"
    static_cache_tokens: int | None = None
    # a graph was compiling in this process during the run: its times include that contention
    beside_compile: bool = False
    lens_capped_at: int | None = None   # the lens's states were kept for the steps before this one only (size cap)


@dataclass
class Branch:
    """A continuation forked from the run (or from another branch) at step `at`, where the visitor
    chose `token` instead of what was generated. Its steps are numbered on from `at`: steps[0] is
    that chosen token (forced, no pass of its own), then what the model generated after it."""
    id: str                     # "b1", "b2", ... unique within the trace
    parent: str                 # "" (the run itself) or the id of the branch it was forked from
    at: int                     # index of the step replaced: the prefix is the prompt + steps 0..at-1
    token: int                  # the token chosen at step `at`
    settings: Settings          # sampling settings of the continuation (max_new_tokens: after the chosen token)
    steps: list[Step] = field(default_factory=list)
    summary: Summary | None = None   # ttft_ms: fork request -> first generated token, with the reused cache
    reused_tokens: int = 0      # prefix positions taken from the cache (prompt + at), none recomputed
    copy_ms: float = 0.0        # copying and cropping that cache (inside ttft_ms)
    cache_bytes: int = 0        # memory of the branch's own cache copy, at its end
    rebuilt_ms: float | None = None   # no cache was in memory (a file, an evicted run): the prefix was computed once
    recompute_ms: float | None = None  # the same first token with the prefix recomputed from scratch (on demand)
    recompute_token: int | None = None  # the token that recomputation gave (greedy: must equal steps[1].id)
    created: str = ""
    # What the branch watched, as its run did (settings.attention / logit_lens): the attention rows of its
    # generated steps (steps[1:]: [layers, heads, keys]; the chosen token's is its parent's row at `at`),
    # and the step (numbered as the lineage's) from which rows or lens states stopped being kept (size cap).
    attention: list[PackedRows] = field(default_factory=list)
    attention_capped_at: int | None = None
    lens_capped_at: int | None = None


@dataclass
class Served:
    """Where a served trace came from (source "served"), and what its client saw: the times are
    vLLM's serving-benchmark definitions, taken on this side of the network."""
    endpoint: str               # the host's name for the endpoint (its URL below, without credentials)
    url: str
    api: str                    # "completions" | "chat" | "llamacpp" | "sglang" | "tgi" | "ollama"
    model: str                  # the model name the server was asked for
    sent: str = "{}"            # the host's extra request fields (JSON), e.g. a server's own penalties turned off
    chunks: int = 0             # streamed chunks that carried tokens
    itl_ms: list[float] = field(default_factory=list)   # gaps between those chunks
    prompt_tokens: int | None = None        # the server's own counts (its `usage`), if it sent them
    completion_tokens: int | None = None


@with_config(FILE)              # read by pydantic, strict (engine/schema/serial.py)
@dataclass
class Trace:
    model: ModelInfo
    settings: Settings
    prompt: Prompt
    prefill: Prefill | None = None
    steps: list[Step] = field(default_factory=list)
    summary: Summary | None = None
    attention: Attention | None = None
    reasoning: str | None = None    # None (normal), or how thinking was produced: switch/tags/scaffold
    observation: Observation | None = None
    created: str = ""
    schema: str = SCHEMA
    run_id: str = ""                # names this run (a fork finds the kept cache by tokens: prefixes.cache_key)
    branches: list[Branch] = field(default_factory=list)
    served: Served | None = None    # a completion streamed from a model server (engine/served)

    @property
    def output_text(self) -> str:
        return "".join(s.text for s in self.steps)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(to_plain(self), ensure_ascii=False, allow_nan=False, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes, max_bytes: int | None = None) -> Trace:
        return read_json(cls, text, max_bytes, header=ours, keys=("schema",))


def ours(data):
    """The file's header, read before its fields: a file of another schema is not ours."""
    if not isinstance(data, dict) or data.get("schema") not in READABLE:
        got = repr(data.get("schema") if isinstance(data, dict) else type(data).__name__)[:80]
        raise TraceFormatError(f"not a Token by Token trace: schema is {got}, expected {SCHEMA!r}",
                               "trace_not_ours", got=got, expected=repr(SCHEMA))
