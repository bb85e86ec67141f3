"""Traces of models served by a serving engine (vLLM, SGLang, TGI, llama.cpp, Ollama), read through
their streaming APIs: see client.py."""

from engine.served.endpoints import Endpoint, endpoint, endpoints_from_env
from engine.served.sse import Bounds, ServedError

__all__ = ["Bounds", "Endpoint", "ServedError", "endpoint", "endpoints_from_env", "stream_served"]


def __getattr__(name: str):
    # the client builds traces with the engine's tokenizer helpers (transformers): it loads on first
    # use, so the page can start before torch and transformers (app.py)
    if name == "stream_served":
        from engine.served.client import stream_served
        return stream_served
    raise AttributeError(f"module 'engine.served' has no attribute {name!r}")
