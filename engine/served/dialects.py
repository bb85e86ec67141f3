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
- `llamacpp`: llama.cpp's own `/completion` with `n_probs`: `completion_probabilities[]` with `id`,
  `token`, raw `bytes`, `logprob`, `top_logprobs[]`; the last event says `stop: true`.
- `sglang`: SGLang's `/generate` with `return_logprob`: `meta_info.output_token_logprobs` as
  [logprob, id, text] triples, cumulative from the start unless the server streams increments.
- `tgi`: TGI's `/generate_stream` with `top_n_tokens`: one `token` {id, text, logprob} per event; the
  last event carries `generated_text` and `details.finish_reason`.
- `ollama`: Ollama's `/api/generate` with `logprobs` (NDJSON, no token ids): `logprobs[]` like the chat
  API's; the last line says `done: true`.

Each dialect object serves one request (SGLang's parser remembers how many tokens it has seen).
A dialect whose server applies the chat template itself (`templates`) gets the visitor's prompt;
the others get the prompt with the template applied here.
"""

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
    err = obj.get("error")
    if err:
        message = err.get("message", err) if isinstance(err, dict) else err
        raise ServedError(f"the server reported an error mid-stream: {str(message)[:300]}")


def _object(obj) -> dict:
    """A streamed event: a JSON object that is not an error report."""
    if not isinstance(obj, dict):
        raise ServedError(f"the server sent an event that is not a JSON object: {str(obj)[:120]}")
    _error(obj)
    return obj


def _choice(obj) -> tuple[dict | None, dict | None]:
    """An OpenAI-style event's first choice (None in a usage-only chunk) and its usage."""
    choices = _object(obj).get("choices")
    if not isinstance(choices, list):
        raise ServedError("the server sent an event without `choices`: not an OpenAI-style stream")
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
    return (choices[0] if choices and isinstance(choices[0], dict) else None), usage


class Completions:
    name, path, sse, templates = "completions", "/v1/completions", True, False

    def __init__(self, token_ids: bool = False):
        self.token_ids = token_ids          # vLLM: ask for "token_id:N" tokens

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature,
                "stream": True, "logprobs": top, "seed": seed, "stream_options": {"include_usage": True}}
        if not top:
            del body["logprobs"]
        if self.token_ids:
            body["return_tokens_as_token_ids"] = True
        return body

    def parse(self, obj) -> Event:
        choice, usage = _choice(obj)
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


def _chat_alt(a: dict, where: str) -> Alt:
    text, aid = _token_id(str(a.get("token", "")))
    return Alt(text, a["id"] if isinstance(a.get("id"), int) else aid, _logprob(a.get("logprob"), where),
               _bytes(a.get("bytes")))


class Chat:
    name, path, sse, templates = "chat", "/v1/chat/completions", True, True

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "temperature": temperature, "stream": True, "logprobs": True, "top_logprobs": top, "seed": seed,
                "stream_options": {"include_usage": True}}
        if not top:
            del body["logprobs"], body["top_logprobs"]
        return body

    def parse(self, obj) -> Event:
        choice, usage = _choice(obj)
        if choice is None:
            return Event([], usage=usage)
        content = ((choice.get("logprobs") or {}).get("content")) or []
        pieces = []
        for i, entry in enumerate(content):
            if not isinstance(entry, dict):
                raise ServedError(f"the server sent a logprobs entry that is not an object: {str(entry)[:80]}")
            text, tid = _token_id(str(entry.get("token", "")))
            alts = [_chat_alt(a, f"token {i}") for a in entry.get("top_logprobs") or [] if isinstance(a, dict)]
            alts.sort(key=lambda a: -a.logprob)
            if tid is None and isinstance(entry.get("id"), int):      # llama.cpp's chat API gives ids
                tid = entry["id"]
            pieces.append(Piece(text, tid, _logprob(entry.get("logprob"), f"token {i}"), alts,
                                _bytes(entry.get("bytes"))))
        delta = choice.get("delta") or {}
        return Event(pieces, text=str(delta.get("content") or ""), finish=choice.get("finish_reason"), usage=usage)


def _alts(entries, where: str, id_key: str = "id", text_key: str = "token") -> list[Alt]:
    alts = [Alt(str(a.get(text_key) or ""), a.get(id_key) if isinstance(a.get(id_key), int) else None,
                _logprob(a.get("logprob"), where), _bytes(a.get("bytes")))
            for a in entries or [] if isinstance(a, dict)]
    return sorted(alts, key=lambda a: -a.logprob)


class LlamaCpp:
    name, path, sse, templates = "llamacpp", "/completion", True, False

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        return {"prompt": prompt, "n_predict": max_tokens, "temperature": temperature, "stream": True,
                "n_probs": top, "post_sampling_probs": False, "seed": seed}     # n_probs 0: none

    def parse(self, obj) -> Event:
        _object(obj)
        pieces = []
        for i, entry in enumerate(obj.get("completion_probabilities") or []):
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
                raise ServedError("llama.cpp sent a token without an id (an old server? it needs logprob fields)")
            pieces.append(Piece(str(entry.get("token") or ""), entry["id"],
                                _logprob(entry.get("logprob"), f"token {i}"),
                                _alts(entry.get("top_logprobs"), f"token {i}"), _bytes(entry.get("bytes"))))
        finish = None
        if obj.get("stop"):
            finish = {"limit": "length", "eos": "stop", "word": "stop"}.get(obj.get("stop_type"), "stop")
        return Event(pieces, text=str(obj.get("content") or ""), finish=finish)


class SGLang:
    name, path, sse, templates = "sglang", "/generate", True, False

    def __init__(self):
        self.seen, self.text = 0, ""

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        return {"text": prompt, "sampling_params": {"temperature": temperature, "max_new_tokens": max_tokens},
                "stream": True, "return_logprob": top > 0, "top_logprobs_num": top, "return_text_in_logprobs": True}

    def parse(self, obj) -> Event:
        _object(obj)
        meta = obj.get("meta_info") or {}
        chosen, tops = meta.get("output_token_logprobs") or [], meta.get("output_top_logprobs") or []
        total = meta.get("output_token_logprobs_length", len(chosen))
        cumulative = len(chosen) == total and total >= self.seen       # else the server streams increments
        start = self.seen if cumulative else 0
        if cumulative and len(chosen) < self.seen:
            raise ServedError("SGLang's token list shrank between two chunks")
        pieces = []
        for i in range(start, len(chosen)):
            triple = chosen[i]
            if not (isinstance(triple, list) and len(triple) == 3 and isinstance(triple[1], int)):
                raise ServedError(f"SGLang sent a token entry that is not [logprob, id, text]: {str(triple)[:80]}")
            listed = (tops[i] if i < len(tops) else None) or []
            alts = [Alt(str(t[2] or ""), t[1], _logprob(t[0], f"token {i}")) for t in listed
                    if isinstance(t, list) and len(t) == 3 and isinstance(t[1], int)]
            pieces.append(Piece(str(triple[2] or ""), triple[1], _logprob(triple[0], f"token {i}"),
                                sorted(alts, key=lambda a: -a.logprob)))
        self.seen = total if cumulative else self.seen + len(chosen)
        text = str(obj.get("text") or "")
        new_text = text[len(self.text):] if cumulative and text.startswith(self.text) else text
        self.text = text if cumulative else self.text + text
        reason = meta.get("finish_reason")
        finish = reason.get("type", "stop") if isinstance(reason, dict) else reason
        return Event(pieces, text=new_text, finish=finish)


class TGI:
    name, path, sse, templates = "tgi", "/generate_stream", True, False
    most = 5                       # TGI refuses more than its --max-top-n-tokens (5 unless raised)

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        params = {"max_new_tokens": max_tokens, "do_sample": temperature > 0, "details": True,
                  "top_n_tokens": min(top, self.most) or None, "seed": seed}
        if temperature > 0:
            params["temperature"] = temperature
        return {"inputs": prompt, "parameters": params}

    def parse(self, obj) -> Event:
        _object(obj)
        token = obj.get("token")
        if not isinstance(token, dict) or not isinstance(token.get("id"), int):
            raise ServedError("TGI sent an event without a token")
        piece = Piece(str(token.get("text") or ""), token["id"], _logprob(token.get("logprob"), "token"),
                      _alts(obj.get("top_tokens"), "token", text_key="text"))
        finish = None
        if obj.get("generated_text") is not None:
            finish = str((obj.get("details") or {}).get("finish_reason") or "stop")
        return Event([piece], text=piece.text, finish=finish)


class Ollama:
    name, path, sse, templates = "ollama", "/api/generate", False, True

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        return {"model": model, "prompt": prompt, "stream": True, "logprobs": top > 0, "top_logprobs": top,
                "options": {"temperature": temperature, "num_predict": max_tokens, "seed": seed}}

    def parse(self, obj) -> Event:
        _object(obj)
        pieces = []
        for i, entry in enumerate(obj.get("logprobs") or []):
            if not isinstance(entry, dict):
                raise ServedError("Ollama sent a logprobs entry that is not an object")
            pieces.append(Piece(str(entry.get("token") or ""), None, _logprob(entry.get("logprob"), f"token {i}"),
                                _alts(entry.get("top_logprobs"), f"token {i}"), _bytes(entry.get("bytes"))))
        finish = str(obj.get("done_reason") or "stop") if obj.get("done") else None
        return Event(pieces, text=str(obj.get("response") or ""), finish=finish)


DIALECTS = {"completions": Completions, "chat": Chat, "llamacpp": LlamaCpp, "sglang": SGLang, "tgi": TGI,
            "ollama": Ollama}


def dialect_for(api: str, token_ids: bool = False):
    """A fresh parser for one request."""
    return Completions(token_ids) if api == "completions" else DIALECTS[api]()


def decode(payload: str):
    try:
        return json.loads(payload)
    except ValueError:
        raise ServedError(f"the server sent an event that is not JSON: {payload[:120]!r}") from None
