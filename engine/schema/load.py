"""How busy the machine was while something was measured (no torch: viz reads it).

A shared machine's other work takes cores from a measurement: its times grow, its rates fall, and
two measurements taken at different moments meet different loads (a ratio between them moves).
engine/lab/host.py watches /proc/stat while a lab experiment or a serving-floor way runs and keeps
what other processes took (`others`), what the hypervisor gave to other virtual machines (`steal`)
and the load average; viz/text/load_note.py says when that was enough to matter.
"""

from __future__ import annotations

from dataclasses import dataclass

# Busy enough to say so: other work took a fifth of the cores, or the hypervisor a twentieth.
BUSY_OTHERS, BUSY_STEAL = 0.20, 0.05


@dataclass
class HostLoad:
    seconds: float          # how long it was watched (the job's pauses for visitors left out)
    cpus: int               # the machine's logical CPUs
    others: float           # share of all CPUs' time other processes used meanwhile (0..1)
    steal: float            # share of all CPUs' time taken by the hypervisor for other machines (0..1)
    load_1m: float          # the 1-minute load average when the watch ended (runnable processes)


def is_busy(load: HostLoad | dict | None) -> bool:
    """Whether the machine was busy enough, while it was watched, for the result to say so."""
    if load is None:
        return False
    others, steal = (load.others, load.steal) if isinstance(load, HostLoad) else (load.get("others", 0),
                                                                                   load.get("steal", 0))
    return others >= BUSY_OTHERS or steal >= BUSY_STEAL
