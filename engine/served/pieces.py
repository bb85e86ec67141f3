"""What a streamed token looks like once parsed, whichever server sent it (engine/served/dialects.py
and engine/served/native.py parse into these), and the checks every parser shares."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from engine.served.sse import ServedError


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


def token_id_of(text: str) -> tuple[str, int | None]:
    """vLLM's `return_tokens_as_token_ids` writes "token_id:N" instead of the text."""
    if text.startswith("token_id:") and text[9:].isdigit():
        return "", int(text[9:])
    return text, None


def logprob_of(value, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or value > 1e-6:
        raise ServedError(f"the server sent a logprob that is not a number ≤ 0 at {where}: {value!r}")
    return max(float(value), -1e4)      # -inf (a token the server rules out) as a finite floor


def raw_bytes(value) -> bytes | None:
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value)
    return None


def raise_error(obj: dict) -> None:
    """An error sent inside the stream (vLLM, SGLang and TGI do this once streaming has begun)."""
    err = obj.get("error")
    if err:
        message = err.get("message", err) if isinstance(err, dict) else err
        raise ServedError(f"the server reported an error mid-stream: {str(message)[:300]}")


def json_object(obj) -> dict:
    """A streamed event: a JSON object that is not an error report."""
    if not isinstance(obj, dict):
        raise ServedError(f"the server sent an event that is not a JSON object: {str(obj)[:120]}")
    raise_error(obj)
    return obj


def first_choice(obj) -> tuple[dict | None, dict | None]:
    """An OpenAI-style event's first choice (None in a usage-only chunk) and its usage."""
    choices = json_object(obj).get("choices")
    if not isinstance(choices, list):
        raise ServedError("the server sent an event without `choices`: not an OpenAI-style stream")
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
    return (choices[0] if choices and isinstance(choices[0], dict) else None), usage


def alternatives(entries, where: str, id_key: str = "id", text_key: str = "token") -> list[Alt]:
    alts = [Alt(str(a.get(text_key) or ""), a.get(id_key) if isinstance(a.get(id_key), int) else None,
                logprob_of(a.get("logprob"), where), raw_bytes(a.get("bytes")))
            for a in entries or [] if isinstance(a, dict)]
    return sorted(alts, key=lambda a: -a.logprob)


def decode(payload: str):
    try:
        return json.loads(payload)
    except ValueError:
        raise ServedError(f"the server sent an event that is not JSON: {payload[:120]!r}") from None
