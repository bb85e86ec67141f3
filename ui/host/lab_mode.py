"""What heavy work a visitor may start (the lab, the serving floor): the host's `TBT_LAB`."""

from __future__ import annotations

from engine import environment
from engine.schema.specs import EMBEDDED

MODES = ("on", "recorded", "off")


def lab_mode(model_id: str) -> str:
    """`TBT_LAB`: "on" (visitors run experiments), "recorded" (no live runs) or "off". Unset: on for
    the embedded model, recorded for a host's hub model (extra copies of a big model, minutes of
    holding it, are the host's decision)."""
    mode = environment.lab_mode()
    if mode in MODES:
        return mode
    return "on" if model_id == EMBEDDED else "recorded"
