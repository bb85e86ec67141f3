"""Subcommands of `python -m engine` that live in their own module, one per file.

Each module here has NAME, HELP, `add_arguments(parser)` and `run(args) -> int`, and imports
nothing heavy at its top (torch and the model load inside `run`, so `--help` stays instant).
engine/cli.py finds them: a new command is a new file here, not an edit of cli.py.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """Every command module in this folder, in name order."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def model_args(p, attn: bool = True) -> None:
    """The options of every command that loads a model, with one set of names and defaults."""
    p.add_argument("--model", default=None, help="hub id or local folder (default: the embedded SmolLM2-135M)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if present)")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    if attn:
        p.add_argument("--attn", default="sdpa", help="attention implementation to load with (sdpa, eager)")
