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
