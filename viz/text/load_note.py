"""What a result measured on a busy machine says about it: how much of the cores other work took
while it was measured (engine/schema/load.py, watched by engine/lab/host.py), and what that did.
Nothing when the machine was quiet enough (below BUSY_OTHERS and BUSY_STEAL)."""

from __future__ import annotations

from engine.schema.floor import MODES, Floor
from engine.schema.load import HostLoad, is_busy

from viz.text.labels import label

STEAL_SAID = 0.01        # steal below 1 % of the CPUs' time is left unsaid


def _get(load, name: str):
    return getattr(load, name) if isinstance(load, HostLoad) else load.get(name)


def _steal(load, lang: str) -> str:
    steal = _get(load, "steal") or 0.0
    return label("load_steal", lang, steal=f"{steal:.0%}") if steal >= STEAL_SAID else ""


def load_note(load: HostLoad | dict | None, lang: str = "en") -> str:
    """A lab experiment's warning, or "" when the machine was quiet while it ran (or nobody watched)."""
    if not is_busy(load):
        return ""
    return label("load_busy", lang, others=f"{_get(load, 'others'):.0%}", cpus=_get(load, "cpus"),
                 steal=_steal(load, lang), load=f"{_get(load, 'load_1m'):.1f}")


def bandwidth_load_note(section: dict | None, lang: str = "en") -> str:
    """The roofline's warning when this machine's bandwidth and FLOP/s (its `hardware` row marked
    measured) were measured at a busy moment, perhaps before the experiment itself ran."""
    machine = next((h for h in (section or {}).get("hardware", []) if h.get("measured")), None)
    load = (machine or {}).get("load")
    if not is_busy(load):
        return ""
    return label("load_busy_bandwidth", lang, bw=f"{machine.get('bandwidth_bytes_s', 0) / 1e9:.1f}",
                 others=f"{_get(load, 'others'):.0%}", cpus=_get(load, "cpus"), steal=_steal(load, lang))


def floor_load_note(floor: Floor, lang: str = "en") -> str:
    """The serving floor's warning: each way ran at its own moment, so say what each one met."""
    loads = [(name, floor.mode(name).load) for name in MODES]
    if not any(is_busy(load) for _, load in loads):
        return ""
    sep = "，" if lang == "zh" else ", "
    each = sep.join(label("load_way", lang, way=label(f"floor_mode_{name}", lang), others=f"{load.others:.0%}")
                    for name, load in loads if load is not None)
    cpus = next(load.cpus for _, load in loads if load is not None)
    return label("load_busy_floor", lang, each=each, cpus=cpus)


# --- a recording (what a visitor first sees): say the load it was recorded under, or that none was kept --
def _loads_of_section(section: dict | None, roofline: bool) -> list:
    section = section or {}
    loads = [section.get("load")]
    if roofline:
        machine = next((h for h in section.get("hardware", []) if h.get("measured")), None)
        loads.append((machine or {}).get("load"))
    return loads


def recorded_load_note(loads: list, lang: str = "en") -> str:
    """For a recording: nothing more when a busy load is already said; "recorded on a quiet machine
    (other work N%)" when every load it kept was quiet; that it kept none, when it has none (a recording
    made before the load was watched), so a visitor comparing it with a new measurement knows."""
    kept = [load for load in loads if load is not None]
    if not kept:
        return label("load_unrecorded", lang)
    if any(is_busy(load) for load in kept):
        return ""                     # the busy note says it
    others = max(_get(load, "others") for load in kept)
    return label("load_quiet", lang, others=f"{others:.0%}", cpus=_get(kept[0], "cpus"))


def recorded_section_note(section: dict | None, name: str, lang: str = "en") -> str:
    """A recorded lab experiment's load line (the roofline: its bandwidth measurement's load too)."""
    return recorded_load_note(_loads_of_section(section, name == "roofline"), lang)


def recorded_floor_note(floor: Floor, lang: str = "en") -> str:
    """A recorded serving floor's load line (each way's load, as recorded)."""
    return recorded_load_note([floor.mode(name).load for name in MODES], lang)
