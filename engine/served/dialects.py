"""What each serving engine's streaming API asks for and sends back, token by token.

A dialect builds the request body for a greedy or sampled completion with top-k logprobs, and
parses one streamed event into `Piece`s: the tokens that event added, each with its text, its id
when the server gives one, its logprob and its top alternatives. Formats, as documented by each
server (tests/fixtures/served/NOTES.md has the sources):

- `completions`: OpenAI `/v1/completions` with `logprobs: k` (vLLM, SGLang, llama-cpp-python,
  llama.cpp): `choices[0].logprobs.{tokens, token_logprobs, top_logprobs}`; vLLM with
  `return_tokens_as_token_ids` writes tokens as "token_id:N".
- `chat`: OpenAI `/v1/chat/completions` with `logprobs: true, top_logprobs: k` (vLLM, SGLang, TGI,
  llama.cpp, Ollama's OpenAI layer): `choices[0].logprobs.content[]` with `token`, `logprob`,
  `bytes`, `top_logprobs[]`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from .sse import ServedError


@dataclass
class Alt:
    text: str
    id: int | None
    logprob: float
    raw: bytes | None = None


@dataclass
class Piece:
    """One generated token as the server reported it."""
    text: str
    id: int | None
    logprob: float | None
    top: list[Alt] = field(default_factory=list)
    raw: bytes | None = None           # the token's bytes, when the server sends them


@dataclass
class Event:
    pieces: list[Piece]
    text: str = ""                     # text this event added (even without logprobs)
    finish: str | None = None          # the server's finish reason, on the last event
    usage: dict | None = None


def _token_id(text: str) -> tuple[str, int | None]:
    """vLLM's `return_tokens_as_token_ids` writes "token_id:N" instead of the text."""
    if text.startswith("token_id:") and text[9:].isdigit():
        return "", int(text[9:])
    return text, None


def _logprob(value, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or value > 1e-6:
        raise ServedError(f"the server sent a logprob that is not a number ≤ 0 at {where}: {value!r}")
    return max(float(value), -1e4)      # -inf (a token the server rules out) as a finite floor


def _bytes(value) -> bytes | None:
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value)
    return None


def _error(obj: dict) -> None:
    """An error sent inside the stream (vLLM, SGLang and TGI do this once streaming has begun)."""
    err = obj.get("error") if isinstance(obj, dict) else None
    if err:
        message = err.get("message", err) if isinstance(err, dict) else err
        raise ServedError(f"the server reported an error mid-stream: {str(message)[:300]}")


def _choice(obj) -> dict | None:
    if not isinstance(obj, dict):
        raise ServedError(f"the server sent an event that is not a JSON object: {str(obj)[:120]}")
    _error(obj)
    choices = obj.get("choices")
    if not isinstance(choices, list):
        raise ServedError("the server sent an event without `choices`: not an OpenAI-style stream")
    return choices[0] if choices and isinstance(choices[0], dict) else None


class Completions:
    name, path, sse = "completions", "/v1/completions", True

    def __init__(self, token_ids: bool = False):
        self.token_ids = token_ids          # vLLM: ask for "token_id:N" tokens

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature,
                "stream": True, "logprobs": top, "seed": seed, "stream_options": {"include_usage": True}}
        if self.token_ids:
            body["return_tokens_as_token_ids"] = True
        return body

    def parse(self, obj) -> Event:
        choice = _choice(obj)
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
        if choice is None:
            return Event([], usage=usage)
        lp = choice.get("logprobs") or {}
        tokens, chosen, tops = lp.get("tokens") or [], lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
        if not (len(tokens) == len(chosen) and (not tops or len(tops) == len(tokens))):
            raise ServedError("the server's logprobs lists have different lengths")
        pieces = []
        for i, token in enumerate(tokens):
            text, tid = _token_id(str(token))
            alts = []
            for alt_text, alt_lp in ((tops[i] or {}).items() if tops and isinstance(tops[i], dict) else []):
                a_text, a_id = _token_id(str(alt_text))
                alts.append(Alt(a_text, a_id, _logprob(alt_lp, f"token {i}")))
            alts.sort(key=lambda a: -a.logprob)
            pieces.append(Piece(text, tid, _logprob(chosen[i], f"token {i}") if chosen[i] is not None else None, alts))
        return Event(pieces, text=str(choice.get("text") or ""), finish=choice.get("finish_reason"), usage=usage)


class Chat:
    name, path, sse = "chat", "/v1/chat/completions", True

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        return {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "temperature": temperature, "stream": True, "logprobs": True, "top_logprobs": top, "seed": seed,
                "stream_options": {"include_usage": True}}

    def parse(self, obj) -> Event:
        choice = _choice(obj)
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
        if choice is None:
            return Event([], usage=usage)
        content = ((choice.get("logprobs") or {}).get("content")) or []
        pieces = []
        for i, entry in enumerate(content):
            if not isinstance(entry, dict):
                raise ServedError(f"the server sent a logprobs entry that is not an object: {str(entry)[:80]}")
            text, tid = _token_id(str(entry.get("token", "")))
            alts = [Alt(*_token_id(str(a.get("token", ""))), _logprob(a.get("logprob"), f"token {i}"), _bytes(a.get("bytes")))
                    for a in entry.get("top_logprobs") or [] if isinstance(a, dict)]
            alts.sort(key=lambda a: -a.logprob)
            pieces.append(Piece(text, tid, _logprob(entry.get("logprob"), f"token {i}"), alts, _bytes(entry.get("bytes"))))
        delta = choice.get("delta") or {}
        return Event(pieces, text=str(delta.get("content") or ""), finish=choice.get("finish_reason"), usage=usage)


DIALECTS = {"completions": Completions, "chat": Chat}


def decode(payload: str):
    try:
        return json.loads(payload)
    except ValueError:
        raise ServedError(f"the server sent an event that is not JSON: {payload[:120]!r}") from None
