"""A Trace of a completion streamed from a model server (source "served").

    stream_served(endpoint, prompt, settings, local=None, cancel=None) -> Generator[Event, None, Trace]

The server does the model work; what we record is what it tells us (each token, its logprob and its
top alternatives) and what we can time from the outside, with the definitions of vLLM's serving
benchmark: TTFT = request sent -> first chunk with content; ITL = the gap between two content
chunks; TPOT = (E2EL - TTFT) / (tokens - 1); E2EL = request sent -> last chunk. These are client
times: the network and the server's queue are in them, and nothing in them is the model's own.

Token ids come from the server when it gives them (vLLM's `return_tokens_as_token_ids`, llama.cpp,
SGLang, TGI), else from a local copy of the model's tokenizer (`local`, an Engine of the same model),
which maps each token's bytes back to its id. Attention, the KV cache and per-layer views need the
model's internals, which a server does not expose: a served trace has none.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from typing import Generator

from engine.host.house import HOUSE
from engine.run.record import Clocks, make_step, summarize
from engine.run.record import Event as RunEvent
from engine.run.sampling import Choice
from engine.model.tokens import TextStream, printable, prompt_tokens
from engine.schema.trace import Candidate, ModelInfo, Prompt, Served, Settings, Step, Trace
from engine.served.dialects import dialect_for
from engine.served.pieces import Piece, decode
from engine.served.endpoints import Endpoint
from engine.served.sse import Bounds, ServedError, events


class IdMap:
    """Token bytes -> id for one tokenizer (the reverse of TokenBytes), built once."""

    def __init__(self, engine):
        tb = engine.token_bytes
        self.engine, self.by_bytes = engine, {}
        for tid in sorted(range(len(engine.tokenizer)), reverse=True):   # lowest id wins a tie
            self.by_bytes[tb.bytes_of(tid)] = tid

    def id_of(self, text: str, raw: bytes | None) -> int | None:
        if raw is not None and raw in self.by_bytes:
            return self.by_bytes[raw]
        if "\ufffd" in text:                   # a character cut in half, already lost in the text
            return None
        return self.by_bytes.get(text.encode("utf-8"))


def _info(endpoint: Endpoint, local, vocab: int) -> ModelInfo:
    """The model as far as we know it: the local copy's architecture when one is named (same
    model), else nothing but its name (0 = unknown)."""
    name = f"served:{endpoint.model}"
    if local is not None:
        return replace(local.info, id=name, source="served", device="server", attn_implementation="server")
    return ModelInfo(id=name, source="served", architecture="unknown", dtype="unknown", device="server",
                     attn_implementation="server", quantization=None, layers=0, heads=0, kv_heads=0, head_dim=0,
                     hidden_size=0, vocab_size=max(vocab, 1), context_length=0, parameters=0, parameter_bytes=0)


def sent_text(endpoint: Endpoint, prompt: str, settings: Settings, local=None) -> str:
    """The text a run sends to `endpoint` for the visitor's `prompt`: a chat-style endpoint gets
    the prompt as it is and applies its own chat template; a completions-style one gets the
    template applied here with the local copy of its tokenizer (`local`, when the host names one,
    and `settings.chat_template` on), else the prompt as it is. The page's load sweep sends the
    same (ui/chapters/speed.py), so that it measures the requests a run makes."""
    return _sent(dialect_for(endpoint.api, endpoint.token_ids), prompt, settings, local)


def _sent(dialect, prompt: str, settings: Settings, local) -> str:
    if local is None or dialect.templates:
        return prompt
    return local.apply_template(prompt, settings)


def _prompt(dialect, prompt: str, settings: Settings, local) -> tuple[Prompt, str]:
    """The prompt record, and the text to send (`sent_text`)."""
    if local is None:
        return Prompt(raw=prompt, templated=prompt, tokens=[], raw_token_count=0), prompt
    templated = local.apply_template(prompt, settings)
    ids = local.encode(templated, templated=settings.chat_template)
    tokens = prompt_tokens(local.token_bytes, templated, ids)
    raw_count = len(local.encode(prompt, templated=False))
    record = Prompt(raw=prompt, templated=templated, tokens=tokens, raw_token_count=raw_count)
    return record, (prompt if dialect.templates else templated)      # as `_sent` says


def stream_served(endpoint: Endpoint, prompt: str, settings: Settings | None = None, local=None,
                  cancel: threading.Event | None = None,
                  bounds: Bounds | None = None) -> Generator[RunEvent, None, Trace]:
    """A visitor's run on a served model: the house's heavy work (a local server's load sweep
    among it) stands still until it ends (engine/host/house.py)."""
    HOUSE.run_begins()
    try:
        return (yield from _stream_served(endpoint, prompt, settings, local, cancel, bounds))
    finally:
        HOUSE.run_ends()


def _stream_served(endpoint: Endpoint, prompt: str, settings: Settings | None, local,
                   cancel: threading.Event | None, bounds: Bounds | None) -> Generator[RunEvent, None, Trace]:
    settings = settings or Settings()
    if not isinstance(prompt, str) or not prompt.strip():
        raise ServedError("the prompt is empty")
    dialect = dialect_for(endpoint.api, endpoint.token_ids)
    top = min(max(settings.top_candidates, 1), endpoint.max_top, getattr(dialect, "most", 20))
    record, sent = _prompt(dialect, prompt, settings, local)
    body = {**dialect.body(endpoint.model, sent, settings.max_new_tokens, settings.temperature, top, settings.seed),
            **dict(endpoint.extra)}
    ids = IdMap(local) if local is not None else None
    trace = Trace(model=_info(endpoint, local, 1), settings=replace(settings, top_candidates=top), prompt=record,
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"), run_id=uuid.uuid4().hex[:12],
                  served=Served(endpoint=endpoint.name, url=endpoint.base_url, api=endpoint.api, model=endpoint.model,
                                sent=json.dumps(dict(endpoint.extra), sort_keys=True)))
    yield RunEvent("tokens", trace)
    text = TextStream()
    start = time.monotonic() * 1000
    arrivals: list[float] = []                 # content chunks' arrival, ms after the request was sent
    finish, usage, largest = None, None, 0
    for arrived, payload in events(endpoint.base_url + dialect.path, body, dialect.sse, bounds or endpoint.bounds,
                                   endpoint.headers(), cancel):
        event = dialect.parse(decode(payload))
        usage = event.usage or usage
        finish = event.finish or finish
        if event.text and not event.pieces:
            raise ServedError(f"{endpoint.name} sent text without logprobs: the server must support "
                              f"{'logprobs/top_logprobs' if endpoint.api == 'chat' else 'logprobs'} for a trace")
        if not event.pieces:
            continue
        if len(event.pieces) == 1 and not event.pieces[0].text:     # vLLM's "token_id:N": the text is the chunk's
            event.pieces[0].text = event.text
        t = arrived - start
        gap = t - (arrivals[-1] if arrivals else 0.0)
        arrivals.append(t)
        for j, piece in enumerate(event.pieces):
            if len(trace.steps) >= settings.max_new_tokens:
                raise ServedError(f"{endpoint.name} sent more than the {settings.max_new_tokens} tokens asked for")
            step = _step(len(trace.steps), piece, ids, text, gap if j == 0 else 0.0, t, len(record.tokens))
            largest = max(largest, step.id, *(c.id for c in step.candidates))
            trace.steps.append(step)
        yield RunEvent("step", trace)
    if cancel is not None and cancel.is_set():
        finish = "cancelled"
    elif finish is None:
        raise ServedError(f"{endpoint.name}'s stream ended without a finish reason: cut off?")
    if trace.steps:
        held = text.flush()
        if held:
            trace.steps[-1].text += held
    trace.model = _info(endpoint, local, largest + 1)
    # each step's t_ms is its chunk's arrival, so the run's figures are vLLM's: TTFT = the first chunk,
    # E2EL = the last, TPOT = (E2EL - TTFT) / (n - 1); a server's stop reasons in our words
    reason = {"stop": "eos", "eos_token": "eos", "length": "max_tokens", "cancelled": "cancelled"}.get(finish, "stop")
    e2el = arrivals[-1] if arrivals else 0.0
    trace.summary = summarize(trace.steps, reason, None, e2el, wall_ms=e2el)
    trace.served.chunks = len(arrivals)
    trace.served.itl_ms = [round(b - a, 3) for a, b in zip(arrivals, arrivals[1:])]
    for key in ("prompt_tokens", "completion_tokens"):
        value = (usage or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            setattr(trace.served, key, value)
    yield RunEvent("done", trace)
    return trace


def _step(index: int, piece: Piece, ids: IdMap | None, text: TextStream, ms: float, t_ms: float,
          n_prompt: int) -> Step:
    tid = piece.id if piece.id is not None else (ids.id_of(piece.text, piece.raw) if ids else None)
    if tid is None:
        raise ServedError(f"the server gave no id for token {index} ({piece.text!r}) and it cannot be mapped "
                          f"with a local tokenizer: name the model's tokenizer, or ask the server for token ids")
    raw = ids.engine.token_bytes.bytes_of(tid) if ids else (piece.raw or piece.text.encode("utf-8"))
    candidates = []
    for alt in piece.top:
        aid = alt.id if alt.id is not None else (ids.id_of(alt.text, alt.raw) if ids else None)
        if aid is None or any(c.id == aid for c in candidates):     # unmappable, or a duplicate text
            continue
        label = ids.engine.text_of(aid) if ids else (alt.text or printable(alt.raw or b""))
        p = math.exp(alt.logprob)
        candidates.append(Candidate(id=aid, text=label, logit=alt.logprob, p_model=p, p_final=p))
    rank = next((r for r, c in enumerate(candidates) if c.id == tid), len(candidates))
    if piece.logprob is not None:
        p_chosen = math.exp(piece.logprob)
    else:
        p_chosen = candidates[rank].p_model if rank < len(candidates) else 0.0
    # the entropy of what the server showed (its top k): a lower bound of the whole distribution's
    entropy = -sum(c.p_model * math.log(c.p_model) for c in candidates if c.p_model > 0)
    choice = Choice(tid, candidates, rank, p_chosen, p_chosen, entropy, entropy)
    return make_step(index, tid, printable(raw), raw, text.push(raw), choice, Clocks(ms=ms, t_ms=t_ms),
                     kv_tokens=n_prompt + index + 1, kv_bytes=0)
