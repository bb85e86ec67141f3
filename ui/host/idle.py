"""An idle app costs the host nothing it could give a visitor.

Gradio's queue looks for a new event every millisecond while it has none (gradio/queueing.py,
`Queue.sleep_when_free`: 1 ms but on Windows): ~1,000 wake-ups a second. Here that was 0.8 s of CPU
in every 10 s with nobody on the page (8 % of a core, py-spy: the event loop's select), taken from
visitors' runs and the back room on a 2-core host, and from every test the app serves. Polling every
IDLE_POLL_S instead costs an event at most that long before it starts (a run takes seconds)."""

from __future__ import annotations

IDLE_POLL_S = 0.02


def quiet_when_idle(demo) -> None:
    """Make the queue of `demo` (after `demo.queue()`) look for events every IDLE_POLL_S when it has
    none. A Gradio without the attribute is left as it is."""
    queue = getattr(demo, "_queue", None)
    if queue is not None and isinstance(getattr(queue, "sleep_when_free", None), (int, float)):
        queue.sleep_when_free = max(queue.sleep_when_free, IDLE_POLL_S)
