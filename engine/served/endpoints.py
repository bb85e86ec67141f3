"""The endpoints a host allows (`TBT_ENDPOINTS`), so that a visitor picks one and never types a URL.

`TBT_ENDPOINTS` is a JSON list: [{"name": "vllm-70b", "url": "http://10.0.0.5:8000", "model":
"meta-llama/Llama-3.1-70B-Instruct", "api": "completions", "token_ids": true, "key_env":
"VLLM_API_KEY", "extra": {"repeat_penalty": 1.0}}, ...]. `api` is one of
engine/served/dialects.DIALECTS; `token_ids` asks vLLM for "token_id:N" tokens; `key_env` names an
environment variable holding a bearer token, so that no secret sits in the list or in a trace;
`extra` goes into every request body as it is (a server's own sampling defaults: llama-cpp-python's
server applies repeat_penalty 1.1 unless told 1.0, so its "temperature 0" is not plain greedy);
`tokenizer` names a model of TBT_MODELS ("embedded" for the built-in one) that is the served model,
for servers that send token texts without ids.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from engine import environment
from engine.errors import InvalidRequest
from engine.served.sse import Bounds


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: str
    model: str
    api: str = "completions"
    token_ids: bool = False
    key_env: str = ""
    max_top: int = 20                 # top alternatives to ask for (OpenAI caps top_logprobs at 20)
    extra: tuple = ()                 # (key, value) pairs added to every request body
    tokenizer: str = ""               # a model of the host's allow-list that is this served model (its tokenizer
                                      # maps token texts to ids; its config describes the model)
    bounds: Bounds = field(default_factory=Bounds)

    @property
    def base_url(self) -> str:
        return self.url.rstrip("/")

    def headers(self) -> dict:
        key = os.environ.get(self.key_env, "") if self.key_env else ""
        return {"Authorization": f"Bearer {key}"} if key else {}


def endpoint(url: str, model: str, api: str = "completions", name: str = "", **kwargs) -> Endpoint:
    """An Endpoint, checked: an http(s) URL with a host, a model name, a known API."""
    from engine.served.dialects import DIALECTS
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(f"endpoint URL must be http(s)://host[:port], got {url!r}")
    if parts.username or parts.password:
        raise InvalidRequest("put credentials in an environment variable (key_env), not in the URL")
    if not isinstance(model, str) or not model.strip() or len(model) > 300:
        raise InvalidRequest("name the model the server serves (--model)")
    if api not in DIALECTS:
        raise InvalidRequest(f"unknown api {api!r}; choose from {', '.join(DIALECTS)}")
    extra = kwargs.pop("extra", None) or {}
    if not isinstance(extra, dict) or not all(isinstance(k, str) for k in extra):
        raise InvalidRequest("extra must be a JSON object of request fields")
    return Endpoint(name=name or f"{parts.hostname}:{parts.port or ''}".rstrip(":"), url=url, model=model.strip(),
                    api=api, extra=tuple(sorted(extra.items())), **kwargs)


def endpoints_from_env() -> list[Endpoint]:
    raw = environment.endpoints()
    if not raw:
        return []
    try:
        entries = json.loads(raw)
        if not isinstance(entries, list):
            raise ValueError("not a list")
        return [endpoint(**{k: v for k, v in e.items() if k in ("name", "url", "model", "api", "token_ids",
                                                                 "key_env", "max_top", "extra", "tokenizer")})
                for e in entries]
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidRequest(f"TBT_ENDPOINTS is not a JSON list of endpoints: {exc}") from None
