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

from engine.served.native import TGI, LlamaCpp, Ollama, SGLang
from engine.served.pieces import Alt, Event, Piece, first_choice, logprob_of, raw_bytes, token_id_of
from engine.served.sse import ServedError


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
        choice, usage = first_choice(obj)
        if choice is None:
            return Event([], usage=usage)
        lp = choice.get("logprobs") or {}
        tokens, chosen, tops = lp.get("tokens") or [], lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
        if not (len(tokens) == len(chosen) and (not tops or len(tops) == len(tokens))):
            raise ServedError("the server's logprobs lists have different lengths")
        pieces = []
        for i, token in enumerate(tokens):
            text, tid = token_id_of(str(token))
            alts = []
            for alt_text, alt_lp in ((tops[i] or {}).items() if tops and isinstance(tops[i], dict) else []):
                a_text, a_id = token_id_of(str(alt_text))
                alts.append(Alt(a_text, a_id, logprob_of(alt_lp, f"token {i}")))
            alts.sort(key=lambda a: -a.logprob)
            pieces.append(Piece(text, tid, logprob_of(chosen[i], f"token {i}") if chosen[i] is not None else None, alts))
        return Event(pieces, text=str(choice.get("text") or ""), finish=choice.get("finish_reason"), usage=usage)


def _chat_alt(a: dict, where: str) -> Alt:
    text, aid = token_id_of(str(a.get("token", "")))
    return Alt(text, a["id"] if isinstance(a.get("id"), int) else aid, logprob_of(a.get("logprob"), where),
               raw_bytes(a.get("bytes")))


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
        choice, usage = first_choice(obj)
        if choice is None:
            return Event([], usage=usage)
        content = ((choice.get("logprobs") or {}).get("content")) or []
        pieces = []
        for i, entry in enumerate(content):
            if not isinstance(entry, dict):
                raise ServedError(f"the server sent a logprobs entry that is not an object: {str(entry)[:80]}")
            text, tid = token_id_of(str(entry.get("token", "")))
            alts = [_chat_alt(a, f"token {i}") for a in entry.get("top_logprobs") or [] if isinstance(a, dict)]
            alts.sort(key=lambda a: -a.logprob)
            if tid is None and isinstance(entry.get("id"), int):      # llama.cpp's chat API gives ids
                tid = entry["id"]
            pieces.append(Piece(text, tid, logprob_of(entry.get("logprob"), f"token {i}"), alts,
                                raw_bytes(entry.get("bytes"))))
        delta = choice.get("delta") or {}
        return Event(pieces, text=str(delta.get("content") or ""), finish=choice.get("finish_reason"), usage=usage)


DIALECTS = {"completions": Completions, "chat": Chat, "llamacpp": LlamaCpp, "sglang": SGLang, "tgi": TGI,
            "ollama": Ollama}


def dialect_for(api: str, token_ids: bool = False):
    """A fresh parser for one request."""
    return Completions(token_ids) if api == "completions" else DIALECTS[api]()
