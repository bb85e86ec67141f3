"""Tokens as bytes: what each token id really holds, and where it sits in the text.

Byte-level BPE (GPT-2, SmolLM2, Qwen, Llama 3) stores each token as a string of stand-in
characters, one per byte ("Ġ" for a space, "ä»" for the first two bytes of "什"). A token can
end in the middle of a multi-byte UTF-8 character, so printing tokens one by one shows "�".
We keep each token's raw bytes instead and regroup them into whole characters.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

from transformers.convert_slow_tokenizer import bytes_to_unicode

from engine.schema.trace import PromptToken

SPM_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")  # sentencepiece byte-fallback tokens


def _hex_for_broken_bytes(exc: UnicodeDecodeError):
    broken = exc.object[exc.start:exc.end]
    return "<" + " ".join(f"{b:02X}" for b in broken) + ">", exc.end


codecs.register_error("tbt-hex", _hex_for_broken_bytes)


def printable(data: bytes) -> str:
    """The bytes as text; bytes that do not form a whole character are shown as <E4 BB>."""
    return data.decode("utf-8", errors="tbt-hex")


class TokenBytes:
    """Maps token ids of one tokenizer to their raw bytes."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        backend = getattr(tokenizer, "backend_tokenizer", None)
        kind = f"{getattr(backend, 'decoder', '')} {getattr(backend, 'pre_tokenizer', '')}"
        self.byte_level = "ByteLevel" in kind
        self.byte_decoder = {c: b for b, c in bytes_to_unicode().items()}
        self.special_ids = set(tokenizer.all_special_ids) | {
            i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
        self.bytes_of = lru_cache(maxsize=200_000)(self._bytes_of)

    def _bytes_of(self, token_id: int) -> bytes:
        piece = self.tokenizer.convert_ids_to_tokens(int(token_id))
        if piece is None:
            return b""
        if token_id in self.special_ids or token_id in self.tokenizer.added_tokens_decoder:
            return piece.encode("utf-8")
        if self.byte_level and all(c in self.byte_decoder for c in piece):
            return bytes(self.byte_decoder[c] for c in piece)
        match = SPM_BYTE.match(piece)
        if match:
            return bytes([int(match.group(1), 16)])
        return piece.replace("\u2581", " ").encode("utf-8")  # sentencepiece marks spaces with ▁


def prompt_tokens(tb: TokenBytes, text: str, ids: list[int]) -> list[PromptToken]:
    """Token records with the character span each one covers in `text`."""
    data = text.encode("utf-8")
    # char_of[b] = index of the character that byte b belongs to; starts = byte offset of each char
    char_of, starts = [], []
    for ci, ch in enumerate(text):
        starts.append(len(char_of))
        char_of.extend([ci] * len(ch.encode("utf-8")))
    boundaries = set(starts) | {len(data)}
    tokens, cursor = [], 0
    for tid in ids:
        raw = tb.bytes_of(tid)
        special = tid in tb.special_ids
        # a vocabulary without some bytes drops them silently (SmolLM2 has no token for 0xF1, so
        # U+40000 becomes three 0x80 tokens): look a few bytes ahead before giving up
        found = data.find(raw, cursor, cursor + len(raw) + 4) if raw else -1
        if found >= 0:
            b0, b1 = found, found + len(raw)
            cursor = b1
        else:  # a token whose bytes are not in the text (e.g. an added BOS): zero width
            b0 = b1 = cursor
        c0 = char_of[b0] if b0 < len(data) else len(text)
        c1 = char_of[b1 - 1] + 1 if b1 > b0 else c0
        fragment = b1 > b0 and (b0 not in boundaries or b1 not in boundaries)
        tokens.append(PromptToken(id=int(tid), text=printable(raw), bytes_hex=raw.hex(),
                                  start=c0, end=c1, fragment=fragment, special=special))
    return tokens


class TextStream:
    """Turns generated token bytes into text, holding back an incomplete character until it is whole."""

    def __init__(self):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="tbt-hex")

    def push(self, data: bytes) -> str:
        return self._decoder.decode(data)

    def flush(self) -> str:
        """Whatever is still held back (a character cut off at the end), shown as hex bytes."""
        pending, _ = self._decoder.getstate()
        self._decoder.reset()
        return printable(pending)
