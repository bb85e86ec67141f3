"""What a visitor reads names no host setting: no TBT_* variable, no `python -m engine …` command
(docs/hosting.md has them, for hosts), in any string of the catalogue, en or zh."""

from __future__ import annotations

import json
import re

import pytest

from tests.paths import ROOT

HOST_WORDS = re.compile(r"\bTBT_[A-Z_]+|python -m engine|\bmake (?:traces|run|test)\b")
CATALOGUE = sorted((ROOT / "assets" / "strings").glob("*.json"))


def sentences(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from sentences(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from sentences(value, f"{path}[{i}]")
    elif isinstance(node, str):
        yield path, node


@pytest.mark.parametrize("path", CATALOGUE, ids=lambda p: p.name)
def test_no_visitor_sentence_names_a_host_setting(path):
    found = [(where, text[:120]) for where, text in sentences(json.loads(path.read_text(encoding="utf-8")))
             if HOST_WORDS.search(text)]
    assert not found, found


def test_the_hosting_doc_still_names_them():
    hosting = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    assert "TBT_LAB" in hosting and "TBT_MODELS" in hosting
