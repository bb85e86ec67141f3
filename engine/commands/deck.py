"""`python -m engine deck`: the walkthrough as one offline HTML file, from a recording or a trace.

The deck is drawn by the page's side (ui/share/deck.py picks each step's charts, viz/out/deck.py writes the
file), which the engine must not import (tests/unit/test_boundaries.py). This command reaches it by
module name at run time: the one documented exception, listed by name in that test, so the
boundary is not weakened silently.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from engine.errors import InvalidRequest

NAME = "deck"
HELP = "the walkthrough as one self-contained HTML file (offline slides), en or zh"
WIRING = "ui.share.deck"           # outside the engine: see the module's docstring


def add_arguments(p) -> None:
    p.add_argument("--trace", default=None,
                   help="a trace JSON (from `trace` or the page) for the next-token steps; default: the recording")
    p.add_argument("--normal", default=None, help="a normal-mode trace for the reasoning step (default: the recording)")
    p.add_argument("--reasoning", default=None, help="its reasoning-mode trace (default: the recording)")
    p.add_argument("--lang", default="en", help="a language of the page's catalogue (en, zh)")
    p.add_argument("--out", required=True, help="where to write the deck's HTML")


def run(args) -> int:
    from engine.environment import Limits
    from engine.schema.validate import read_trace
    traces = {}
    for kind, path in (("next", args.trace), ("normal", args.normal), ("reasoning", args.reasoning)):
        if path:
            try:
                data = Path(path).read_bytes()
            except OSError as exc:
                raise InvalidRequest(f"cannot read {path}: {exc.strerror}") from None
            traces[kind] = read_trace(data, Limits.from_env())       # checked as an upload is
    if bool(args.normal) != bool(args.reasoning):
        raise InvalidRequest("--normal and --reasoning go together (one comparison)")
    html = importlib.import_module(WIRING).deck_html(traces or None, args.lang, live=bool(traces))
    Path(args.out).write_text(html, encoding="utf-8")
    slides = html.count('<section class="slide ')
    print(f"{args.out}: {len(html.encode('utf-8')) / 1e6:.2f} MB, {slides} slides")
    return 0
