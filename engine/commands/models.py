"""`python -m engine models --matrix`: every feature measured on tiny models of each architecture
(built from transformers configs, random weights, nothing downloaded: engine/matrix/)."""

from __future__ import annotations

import json

from engine.errors import InvalidRequest

NAME = "models"
HELP = "the architecture matrix: each feature on tiny models of each architecture (✓ or the refusal)"


def add_arguments(p) -> None:
    p.add_argument("--matrix", action="store_true", help="measure the matrix (the only action so far)")
    p.add_argument("--arch", default=None, help="comma-separated architectures (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON only")


def run(args) -> int:
    from engine.matrix.measure import matrix, table
    from engine.matrix.tiny import ARCHS
    if not args.matrix:
        raise InvalidRequest("say --matrix: `python -m engine models --matrix [--json]`")
    archs = ARCHS if not args.arch else tuple(a.strip() for a in args.arch.split(","))
    unknown = [a for a in archs if a not in ARCHS]
    if unknown:
        raise InvalidRequest(f"unknown architecture {', '.join(unknown)}; choose among {', '.join(ARCHS)}")
    result = matrix(archs)
    print(json.dumps(result, ensure_ascii=False, indent=1) if args.json else table(result))
    bad = [a for a, row in result.items() for c, v in row.items() if c != "seconds" and not str(v).startswith(("✓", "refused"))]
    return 1 if bad else 0
