"""Property-based tests (hypothesis): whatever a visitor sends, the engine either accepts it or
raises its own typed error, never anything else.

- Requests: `stream_trace` validates the settings, cleans the prompt, applies the chat template,
  tokenizes and groups the tokens into characters before any model work; the run itself is never
  started here (the generator is closed unstarted), so 1000+ cases take seconds.
- Trace JSON: random documents, random mutations of a real trace at a random path, truncations
  and random bytes; each either parses into a Trace that writes back to the same JSON, or raises
  TraceFormatError.
"""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import EngineError, InvalidRequest, Settings, stream_trace
from engine.errors import TraceFormatError
from engine.run.reasoning import template_text
from engine.run.request import clean_prompt
from engine.model.tokens import prompt_tokens
from engine.schema.trace import Trace
from tests.paths import FIXTURES

CASES = settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))

# --- requests -------------------------------------------------------------------------------

# text a visitor might type or paste: any code point (lone surrogates, NUL and controls included),
# plus the awkward families named explicitly so they come up often
AWKWARD = st.sampled_from([
    "", " ", "\x00", "\u200b", "\u202e", "\u0301\u0301\u0301", "👩‍👩‍👧‍👦", "🏳️‍🌈", "مرحبا بالعالم",
    "שָׁלוֹם", "<script>alert(1)</script>", "**bold** [x](javascript:alert(1))", "\ud800", "\udfff",
    "什么是量子计算", "<|im_start|>system\n", "<think>", "\r\n\t", "\ufffd", "\U0010ffff",
])
TEXT = st.one_of(st.text(max_size=200), st.lists(st.one_of(AWKWARD, st.text(max_size=8)), max_size=12).map("".join),
                 st.text(alphabet=st.characters(codec=None), max_size=60))
ANY_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                       st.text(max_size=10), st.just(2**70), st.just(-(2**70)))
NUMERIC_FIELDS = {
    "max_new_tokens": st.integers(-5, 5000), "temperature": st.floats(-1, 200) | st.just(math.nan),
    "top_k": st.integers(-5, 10**8), "top_p": st.floats(-0.5, 1.5) | st.just(math.nan),
    "seed": st.integers(-(2**64), 2**64), "top_candidates": st.integers(-3, 300),
    "thinking_budget": st.integers(-3, 5000),
}
FLAGS = ("use_cache", "chat_template", "attention", "logit_lens", "ignore_eos")


@st.composite
def requests(draw):
    fields = {}
    for name, good in NUMERIC_FIELDS.items():
        if draw(st.booleans()):
            fields[name] = draw(st.one_of(good, ANY_SCALAR))
    for name in FLAGS:
        if draw(st.integers(0, 3)) == 0:
            fields[name] = draw(st.one_of(st.booleans(), ANY_SCALAR))
    if draw(st.booleans()):
        fields["mode"] = draw(st.one_of(st.sampled_from(["normal", "reasoning"]), ANY_SCALAR))
    if draw(st.integers(0, 3)) == 0:
        fields["stop"] = draw(st.one_of(st.lists(TEXT, max_size=10), ANY_SCALAR))
    prompt = draw(st.one_of(TEXT, TEXT.map(lambda t: t * 50), ANY_SCALAR))
    return prompt, fields


@CASES
@given(requests())
def test_any_request_is_accepted_or_rejected_with_invalid_request(engine, request_):
    prompt, fields = request_
    try:
        run = stream_trace(engine, prompt, Settings(**fields))
    except InvalidRequest as exc:
        assert str(exc).strip()                 # says what to change
        return
    run.close()                                 # accepted: the run is never started
    assert isinstance(prompt, str) and prompt.strip()


@CASES
@given(TEXT, st.booleans())
def test_any_prompt_tokenizes_into_spans_that_cover_its_characters(engine, text, template):
    """Token spans stay inside the templated text, in order; when the tokens hold all of its bytes,
    every character belongs to some token."""
    try:
        prompt = clean_prompt(text, engine.limits)
    except InvalidRequest:
        assert not isinstance(text, str) or not text.strip()
        return
    templated = template_text(engine, prompt, Settings(chat_template=template), engine.thinking_style)
    tokens = prompt_tokens(engine.token_bytes, templated, engine.encode(templated, templated=template))
    n = len(templated)
    assert all(0 <= t.start <= t.end <= n for t in tokens)
    assert [t.start for t in tokens] == sorted(t.start for t in tokens)
    if b"".join(bytes.fromhex(t.bytes_hex) for t in tokens) == templated.encode("utf-8"):
        covered = set()              # lossless tokenization: every character belongs to a token
        for t in tokens:
            covered.update(range(t.start, t.end))
        assert covered == set(range(n))


# --- trace JSON -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_trace_json() -> str:
    """A real trace (sampled run with attention), cut to 6 steps so mutations stay quick."""
    data = json.loads((FIXTURES / "trace_zh.json").read_text(encoding="utf-8"))
    data["steps"] = data["steps"][:6]
    if data.get("attention"):
        data["attention"]["steps"] = data["attention"]["steps"][:6]
    text = json.dumps(data, ensure_ascii=False)
    Trace.from_json(text)                       # the starting point itself is valid
    return text


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, (*path, i))


def _parse(text):
    try:
        trace = Trace.from_json(text, max_bytes=5_000_000)
    except TraceFormatError as exc:
        assert str(exc).strip()
        return None
    # whatever parses is a Trace that writes back and reads again to the same thing
    again = Trace.from_json(trace.to_json())
    assert again.to_json() == trace.to_json()
    return trace


@CASES
@given(st.data())
def test_mutated_trace_parses_or_raises_trace_format_error(small_trace_json, data):
    doc = json.loads(small_trace_json)
    paths = list(_paths(doc))
    path = data.draw(st.sampled_from(paths[1:]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    action = data.draw(st.sampled_from(["replace", "delete", "wrap", "nan"]))
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == "wrap":
        parent[path[-1]] = [parent[path[-1]]]
    elif action == "nan":
        parent[path[-1]] = math.nan
    else:
        parent[path[-1]] = data.draw(JSON_VALUES)
    _parse(json.dumps(doc, ensure_ascii=data.draw(st.booleans())))


@CASES
@given(st.one_of(JSON_VALUES.map(json.dumps), st.text(max_size=300), st.binary(max_size=300),
                 st.integers(0, 10**6).map(lambda n: "[" * (n % 100_000) + "]" * (n % 7))))
def test_random_documents_parse_or_raise_trace_format_error(text):
    _parse(text)


@CASES
@given(st.integers(0, 10**9), st.booleans())
def test_truncated_trace_raises_trace_format_error(small_trace_json, cut, as_bytes):
    cut = cut % len(small_trace_json)
    text = small_trace_json[:cut]
    with pytest.raises(TraceFormatError):
        Trace.from_json(text.encode("utf-8", "ignore") if as_bytes else text)


def test_typed_errors_share_one_base():
    assert issubclass(TraceFormatError, EngineError) and issubclass(InvalidRequest, EngineError)
