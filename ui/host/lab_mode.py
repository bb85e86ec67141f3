"""What heavy work a visitor may start: the host's `TBT_LAB`.

Heavy work is what runs as a house job for minutes (engine/host/house.py): the lab's experiments,
the serving floor (the page's and `/serve`), the reasoning evaluation and the served model's load
sweep. Each of them asks `allow` before it starts, on the page and through the API alike: the
page's buttons are not the only way in (any caller can send a page event to the queue)."""

from __future__ import annotations

from engine import environment
from engine.schema.specs import EMBEDDED

from ui.host.errors import refuse

MODES = ("on", "recorded", "off")


def lab_mode(model_id: str | None) -> str:
    """`TBT_LAB`: "on" (visitors run experiments), "recorded" (no live runs) or "off". Unset: on for
    the embedded model, recorded for a host's hub model (extra copies of a big model, minutes of
    holding it, are the host's decision). `model_id` None (work that holds no model of ours: the
    load sweep of a served model the host listed): on unless the host said otherwise."""
    mode = environment.lab_mode()
    if mode in MODES:
        return mode
    return "on" if model_id in (EMBEDDED, None) else "recorded"


def allow(models, model_id: str | None, lang: str) -> None:
    """Refuse (a gr.Error in `lang`, keyed err_heavy_<mode>) heavy work on `model_id` ("" or None: the
    host's default) unless the host's mode is "on". Asked before the model is loaded: a model the
    host does not offer is left to `models.get`'s own refusal."""
    chosen = model_id or models.default
    mode = lab_mode(chosen) if chosen in models.allowed else environment.lab_mode()
    if mode in ("recorded", "off"):
        raise refuse(f"heavy_{mode}", lang)


def allow_served(lang: str) -> None:
    """The load sweep's check: it holds none of our models, so only the host's explicit mode counts."""
    if (mode := lab_mode(None)) != "on":
        raise refuse(f"heavy_{mode}", lang)
