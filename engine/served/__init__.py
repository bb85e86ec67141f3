"""Traces of models served by a serving engine (vLLM, SGLang, TGI, llama.cpp, Ollama), read through
their streaming APIs: see client.py."""

from .client import stream_served
from .endpoints import Endpoint, endpoint, endpoints_from_env
from .sse import Bounds, ServedError

__all__ = ["Bounds", "Endpoint", "ServedError", "endpoint", "endpoints_from_env", "stream_served"]
