"""The servers' own streaming APIs (llama.cpp, SGLang, TGI, Ollama): formats in engine/served/dialects.py."""

from __future__ import annotations

from engine.served.pieces import Alt, Event, Piece, alternatives, json_object, logprob_of, raw_bytes
from engine.served.sse import ServedError


class LlamaCpp:
    name, path, sse, templates = "llamacpp", "/completion", True, False

    def body(self, model: str, prompt: str, max_tokens: int, temperature: float, top: int, seed: int) -> dict:
        return {"prompt": prompt, "n_predict": max_tokens, "temperature": temperature, "stream": True,
                "n_probs": top, "post_sampling_probs": False, "seed": seed}     # n_probs 0: none

    def parse(self, obj) -> Event:
        json_object(obj)
        pieces = []
        for i, entry in enumerate(obj.get("completion_probabilities") or []):
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
                raise ServedError("llama.cpp sent a token without an id (an old server? it needs logprob fields)")
            pieces.append(Piece(str(entry.get("token") or ""), entry["id"],
                                logprob_of(entry.get("logprob"), f"token {i}"),
                                alternatives(entry.get("top_logprobs"), f"token {i}"), raw_bytes(entry.get("bytes"))))
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
        json_object(obj)
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
            alts = [Alt(str(t[2] or ""), t[1], logprob_of(t[0], f"token {i}")) for t in listed
                    if isinstance(t, list) and len(t) == 3 and isinstance(t[1], int)]
            pieces.append(Piece(str(triple[2] or ""), triple[1], logprob_of(triple[0], f"token {i}"),
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
        json_object(obj)
        token = obj.get("token")
        if not isinstance(token, dict) or not isinstance(token.get("id"), int):
            raise ServedError("TGI sent an event without a token")
        piece = Piece(str(token.get("text") or ""), token["id"], logprob_of(token.get("logprob"), "token"),
                      alternatives(obj.get("top_tokens"), "token", text_key="text"))
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
        json_object(obj)
        pieces = []
        for i, entry in enumerate(obj.get("logprobs") or []):
            if not isinstance(entry, dict):
                raise ServedError("Ollama sent a logprobs entry that is not an object")
            pieces.append(Piece(str(entry.get("token") or ""), None, logprob_of(entry.get("logprob"), f"token {i}"),
                                alternatives(entry.get("top_logprobs"), f"token {i}"), raw_bytes(entry.get("bytes"))))
        finish = str(obj.get("done_reason") or "stop") if obj.get("done") else None
        return Event(pieces, text=str(obj.get("response") or ""), finish=finish)
