"""`python -m engine deck`: the walkthrough as an offline deck from the command line, from the
recording or from a trace of one's own (issue 31)."""

import re
import subprocess
import sys

from engine import Trace
from tests.paths import ROOT


def test_deck_from_a_trace_in_chinese(tmp_path):
    trace = ROOT / "tests" / "fixtures" / "trace_zh.json"
    out = tmp_path / "deck.html"
    done = subprocess.run([sys.executable, "-m", "engine", "deck", "--trace", str(trace), "--lang", "zh",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    run = Trace.from_json(trace.read_text(encoding="utf-8"))
    assert '<html lang="zh-CN">' in page and "default-src 'none'" in page
    # the cover and the steps drawn from the run itself (issue 39: no recorded lab, floor, profile or chapter 7 pair)
    assert page.count('<section class="slide') == 7
    assert run.prompt.raw[:6] in page and "小明" not in page     # the visitor's own prompt, not the recording's
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", page)


def test_a_file_that_is_not_a_trace_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "engine", "deck", "--trace", str(bad), "--out", str(tmp_path / "d.html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr and done.stderr.strip()
