"""Tokens as bytes: byte-level fragments regroup into whole characters, never '\ufffd'."""

import pytest

from engine import Settings, run_trace
from engine.model.tokens import TextStream, printable


def test_hello_world_is_four_tokens(engine):
    trace = run_trace(engine, "Hello, world!", Settings(max_new_tokens=1, chat_template=False))
    assert [t.text for t in trace.prompt.tokens] == ["Hello", ",", " world", "!"]
    assert trace.prompt.raw_token_count == 4


def test_chinese_fragments_regroup_into_seven_characters(engine):
    trace = run_trace(engine, "什么是量子计算", Settings(max_new_tokens=1, chat_template=False))
    tokens = trace.prompt.tokens
    assert len(tokens) == 11 and any(t.fragment for t in tokens)
    assert all("\ufffd" not in t.text for t in tokens)
    chars = trace.prompt.characters()
    assert [c for c, _ in chars] == list("什么是量子计算")
    for char, owners in chars:
        assert owners, char
        joined = b"".join(bytes.fromhex(tokens[i].bytes_hex) for i in owners)
        assert char.encode("utf-8") in joined
    assert b"".join(bytes.fromhex(t.bytes_hex) for t in tokens) == "什么是量子计算".encode()


def test_templated_spans_cover_the_text(engine):
    trace = run_trace(engine, "Hi 👋🏽 there", Settings(max_new_tokens=1))
    prompt = trace.prompt
    assert prompt.templated.count("Hi 👋🏽 there") == 1
    rebuilt = b"".join(bytes.fromhex(t.bytes_hex) for t in prompt.tokens)
    assert rebuilt == prompt.templated.encode("utf-8")
    assert any(t.special for t in prompt.tokens)          # <|im_start|> etc.
    for a, b in zip(prompt.tokens, prompt.tokens[1:]):
        assert a.start <= b.start and a.end <= b.end


@pytest.mark.parametrize("prompt", [
    "👩‍👩‍👧‍👦 family and 🏳️‍🌈 flag",          # ZWJ sequences
    "שלום עולם مرحبا بالعالم",                  # right-to-left scripts
    "e\u0301 a\u0308 Z\u0335\u0321",            # combining marks
    "tab\tbell\x07 nul\x00 esc\x1b[31m",        # control characters
    "lone \ud800 surrogate \udfff here",        # not encodable as UTF-8
])
def test_odd_prompts_trace_without_crashing(engine, prompt):
    trace = run_trace(engine, prompt, Settings(max_new_tokens=2))
    assert trace.prefill.tokens == len(trace.prompt.tokens) > 0
    assert "\ufffd" not in "".join(t.text for t in trace.prompt.tokens if "\ufffd" not in trace.prompt.raw)
    trace.to_json()


def test_text_stream_holds_back_partial_characters():
    stream = TextStream()
    data = "量子".encode()
    assert stream.push(data[:2]) == ""
    assert stream.push(data[2:4]) == "量"
    assert stream.push(data[4:5]) == ""
    assert stream.flush() == "<E5 AD>"
    assert printable(b"\xe4\xbb") == "<E4 BB>"
