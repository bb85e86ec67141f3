"""docs/trace-format.md is held to the code: its decoder, run as the document writes it (the
standard library and zstandard only), decodes stored traces to exactly what the engine's own reader
gives; its field tables name every field of every dataclass; its shapes hold on real files.
And the README stays a front door: at most 15 KB, and every relative link in it and in docs/
points at a file (and a heading) that exists."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import unicodedata
from pathlib import Path

import pytest

from tests.paths import FIXTURES, ROOT

DOC = ROOT / "docs" / "trace-format.md"
README = ROOT / "README.md"
README_MAX_BYTES = 15 * 1024

# stored traces with packed attention: zstd blocks (trace@3, the recordings) and zlib blocks (trace@1)
TRACES = [ROOT / "assets" / "traces" / "en-next.json", ROOT / "assets" / "traces" / "zh-next.json",
          FIXTURES / "trace_en_sampled.json"]


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def doc_decoder() -> dict:
    """The document's own decoder: the first ```python block under "A decoder in the standard
    library", executed as written, with nothing of this repository in its namespace."""
    section = doc_text().split("## A decoder in the standard library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert not re.search(r"^\s*(from|import)\s+(engine|viz|ui)\b", code, re.M), "the decoder imports the repository"
    namespace: dict = {"__name__": "trace_format_doc"}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def decoder() -> dict:
    return doc_decoder()


def engine_trace(path: Path):
    from engine.schema.validate import read_trace   # the engine only to compare against
    return read_trace(path.read_bytes())


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_documented_decoder_reads_attention_as_the_engine_does(decoder, path):
    plain = decoder["read"](path)
    trace = engine_trace(path)
    blocks = plain["attention"]["prefill"] + plain["attention"]["steps"]
    theirs = trace.attention.prefill + trace.attention.steps
    assert blocks and len(blocks) == len(theirs)
    codecs = {b.get("codec", "zlib") for b in blocks}
    assert codecs == {"zstd"} if plain["schema"].endswith("@3") else codecs == {"zlib"}
    for block, packed in zip(blocks, theirs):
        shape, values = decoder["unpack_rows"](block)
        expected = packed.unpack()
        assert list(shape) == list(expected.shape)
        flat = expected.reshape(-1).tolist()
        assert len(values) == len(flat)
        # the same fixed-point integers, and the same values to float32 precision
        assert [round(v * 4095) for v in values] == [round(v * 4095) for v in flat]
        assert max((abs(a - b) for a, b in zip(values, flat)), default=0.0) < 1e-6


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_documented_shapes_and_sums_hold(decoder, path):
    """Prefill blocks [H, n, n] one per layer, step i's block [L, H, P + i], every row sums to 1."""
    plain = decoder["read"](path)
    model, attention = plain["model"], plain["attention"]
    L, H, P, n = model["layers"], model["heads"], len(plain["prompt"]["tokens"]), attention["prefill_tokens"]
    assert len(attention["prefill"]) == L
    for block in attention["prefill"]:
        shape, values = decoder["unpack_rows"](block)
        assert shape == [H, n, n]
        for r in range(H * n):
            i = r % n                                       # the query position of this row
            row = values[r * n:(r + 1) * n]
            assert abs(sum(row) - 1) <= 1 / 8190 + 1e-6
            assert all(v == 0 for v in row[i + 1:])         # causal: nothing right of the diagonal
    for i, block in enumerate(attention["steps"]):
        shape, values = decoder["unpack_rows"](block)
        assert shape == [L, H, P + i]
        keys = shape[-1]
        for r in range(L * H):
            assert abs(sum(values[r * keys:(r + 1) * keys]) - 1) <= 1 / 8190 + 1e-6


def test_the_documented_decoder_reads_hidden_states_as_the_engine_writes_them(decoder):
    """No stored file carries `hidden` (an export carries the lens): the engine writes one here,
    with values that only little-endian float32 in row-major order gives back."""
    import struct

    import numpy as np

    from engine.schema.packed import Hidden

    trace = engine_trace(TRACES[0])
    rows, size = trace.model.layers - 1, trace.model.hidden_size
    values = [struct.unpack("<f", struct.pack("<f", (k % 977) * 0.37 - 150.5 + k / 1e4))[0] for k in range(rows * size)]
    trace.steps[0].hidden = Hidden(shape=[rows, size], data=struct.pack(f"<{len(values)}f", *values))
    plain = json.loads(trace.to_json())
    shape, decoded = decoder["unpack_hidden"](plain["steps"][0]["hidden"])
    assert shape == [rows, size] and decoded == values
    # what the lens reads (engine/model/lens.py: hidden_array) is the same
    assert np.frombuffer(trace.steps[0].hidden.data, dtype="<f4").tolist() == decoded
    assert math.prod(shape) * 4 == len(trace.steps[0].hidden.data)


def documented_fields() -> dict[str, list[str]]:
    """Each "### `Name`" table of the document: its field names, in order."""
    tables = {}
    for name, body in re.findall(r"^### `(\w+)`\n(.*?)(?=^#)", doc_text() + "\n#", re.S | re.M):
        tables[name] = re.findall(r"^\| `(\w+)` \|", body, re.M)
    return tables


def test_every_field_of_every_object_is_documented():
    from engine.schema import trace as schema
    from engine.schema.specs import ModelInfo
    classes = {"Trace": schema.Trace, "ModelInfo": ModelInfo, "Settings": schema.Settings,
               "Prompt": schema.Prompt, "PromptToken": schema.PromptToken, "Prefill": schema.Prefill,
               "Step": schema.Step, "Candidate": schema.Candidate, "LensGuess": schema.LensGuess,
               "Hidden": schema.Hidden, "Attention": schema.Attention, "PackedRows": schema.PackedRows,
               "Summary": schema.Summary, "Observation": schema.Observation, "Branch": schema.Branch,
               "Served": schema.Served}
    tables = documented_fields()
    assert set(tables) == set(classes)
    for name, cls in classes.items():
        assert tables[name] == [f.name for f in dataclasses.fields(cls)], name
    # and every type the trace's dataclasses refer to is one of them
    for cls in classes.values():
        for f in dataclasses.fields(cls):
            for word in re.findall(r"[A-Z]\w+", str(f.type)):
                assert word in classes or word == "None", (cls.__name__, f.name, word)


def test_the_schema_string_and_readable_versions_are_the_code_s(decoder):
    from engine.schema.trace import READABLE, SCHEMA
    assert f"# The trace format (`{SCHEMA}`)" in doc_text()
    assert tuple(decoder["SCHEMAS"]) == READABLE
    from engine.schema.packed import SCALE
    assert decoder["SCALE"] == SCALE


def test_a_stored_trace_holds_only_documented_fields(decoder):
    tables = documented_fields()
    plain = decoder["read"](TRACES[0])
    assert set(plain) <= set(tables["Trace"])
    for step in plain["steps"]:
        assert set(step) <= set(tables["Step"])


# --- the README as a front door, and links that resolve ---------------------------------------------

def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def markdown_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("**/*.md"))]


def test_the_readme_is_at_most_15_kb():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size:,} bytes; the front door holds at most {README_MAX_BYTES:,}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
        if re.match(r"[a-z]+:", target):          # https:, mailto: ...
            continue
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            broken.append(target)
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"
