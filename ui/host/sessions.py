"""A session's memory goes when its visitor leaves.

Gradio keeps a `SessionState` for every session hash it has seen (gradio/state_holder.py): a copy
of the config of every block on the page (470 here, ~0.7 MB and ~0.5 s of CPU to build, measured
with tracemalloc), each output an event of that session updated (the charts' full specs), and its
gr.State values (the trace on show and its tree: attention rows and the logit lens's states). When
the visitor's tab closes (or a gradio_client `Client` goes away) Gradio marks the session closed and
deletes its gr.State values an hour later, but the SessionState itself stays until 10,000 sessions
have been seen: on a public Space that is gigabytes, growing with every visitor.

`SessionReaper` drops the whole session once its visitor has been gone `grace_s` seconds
(TBT_SESSION_GRACE_S). Leaving is Gradio's own unload event (the heartbeat stream closed); a tab
that reconnects within the grace keeps everything, one that comes back later starts as a new
visitor (the page opens on the recording again). The sweep runs on each unload, so no thread is needed:
sessions wait at most until the next visitor leaves after their grace.
"""

from __future__ import annotations

import datetime
import threading
import weakref

import gradio as gr


# a session used this long after its unload has reconnected (the unload event itself uses it once)
RECONNECTED = datetime.timedelta(seconds=5)
_REAPERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()     # demo -> its reaper (for /status)


class SessionReaper:
    """Sessions whose visitors left, dropped from Gradio's state holder after `grace_s` seconds."""

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self.demo: gr.Blocks | None = None
        self._left: dict[str, datetime.datetime] = {}     # session hash -> when its visitor left
        self._lock = threading.Lock()
        self.dropped = 0

    def attach(self, demo: gr.Blocks) -> None:
        """Listen for leaving visitors on `demo` (inside its `with gr.Blocks()`)."""
        self.demo = demo
        _REAPERS[demo] = self
        demo.unload(self.left)

    def left(self, request: gr.Request) -> None:
        """A visitor left (Gradio's unload event): mark the session, then sweep."""
        session = getattr(request, "session_hash", None)
        if session:
            with self._lock:
                self._left[session] = datetime.datetime.now()
        self.sweep()

    def sweep(self, now: datetime.datetime | None = None) -> int:
        """Drop every session gone longer than the grace; returns how many went. A session used
        again after its visitor left (a tab that reconnected) is kept: it is no longer gone."""
        holder = getattr(self.demo, "state_holder", None)
        if holder is None:
            return 0
        now = datetime.datetime.now() if now is None else now
        grace = datetime.timedelta(seconds=self.grace_s)
        with self._lock:
            due = [s for s, at in self._left.items() if now - at >= grace]
            for s in due:
                at = self._left.pop(s)
                if holder.time_last_used.get(s, at) - at <= RECONNECTED:
                    drop_session(holder, s)
                    self.dropped += 1
        return len(due)

    def waiting(self) -> int:
        return len(self._left)


def describe(demo: gr.Blocks | None) -> dict:
    """The sessions `demo` holds now (Gradio's state holder: each has its copy of the page), those
    whose visitors left and wait out their grace, and those the reaper dropped since the start."""
    holder = getattr(demo, "state_holder", None)
    reaper = _REAPERS.get(demo) if demo is not None else None
    held = 0
    if holder is not None:
        with holder.lock:
            held = len(holder.session_data)
    return {"sessions": held, "sessions_leaving": reaper.waiting() if reaper else 0,
            "sessions_dropped": reaper.dropped if reaper else 0}


def drop_session(holder, session: str) -> None:
    """Remove one session from Gradio's StateHolder: its gr.State values (through their
    delete_callback, as Gradio's own expiry does) and then the SessionState with its config."""
    if session not in holder:
        return
    holder.delete_state(session)
    with holder.lock:
        holder.session_data.pop(session, None)
        holder.time_last_used.pop(session, None)
