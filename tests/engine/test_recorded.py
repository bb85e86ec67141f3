"""The recordings the walkthrough replays: re-recording one with our CLI gives the same run (that each
loads under the current schema is tests/unit/test_trace_validate.py's, which read them all already)."""

import json

import pytest

from engine import Trace
from tests import numerics
from tests.cli import run_here
from tests.paths import ROOT

TRACES = ROOT / "assets" / "traces"
MANIFEST = json.loads((TRACES / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.numerics
def test_re_recording_gives_the_same_run(tmp_path, engine, monkeypatch, capsys):
    """The manifest's command for one recording, run again (in this process: tests/cli.py)."""
    name = "zh-normal.json"
    out = tmp_path / name
    done = run_here(engine, monkeypatch, capsys, "trace", *MANIFEST["traces"][name], "--out", str(out))
    assert done.returncode == 0, done.stderr
    stored = Trace.from_json((TRACES / name).read_text(encoding="utf-8"))
    fresh = Trace.from_json(out.read_text(encoding="utf-8"))
    assert fresh.settings == stored.settings
    assert [t.id for t in fresh.prompt.tokens] == [t.id for t in stored.prompt.tokens]
    # greedy decoding: the same tokens, or the same up to a near tie the recording's CPU broke the other way
    got, want, gaps = [s.id for s in fresh.steps], [s.id for s in stored.steps], numerics.margins(stored.steps)
    numerics.assert_same_greedy(got, want, gaps)
