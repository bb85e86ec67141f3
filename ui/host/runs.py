"""Per-visitor run control: a Stop flag per browser session, and trace files for download."""

from __future__ import annotations

import atexit
import functools
import json
import logging
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine import environment
from engine.schema.trace import Trace
from ui.host.gpu import ZERO_GPU

log = logging.getLogger(__name__)

# Runs that may be in flight on the one shared engine; their steps interleave under its lock.
ENGINE_CONCURRENCY = environment.concurrency()
# How often a streaming run redraws the page (Explore and the reasoning comparison): ~10 times a
# second is enough to read, and a redraw per token would cost more than the token.
STREAM_INTERVAL_S = 0.1


class StopFlags:
    """One threading.Event per session. Stop sets it; the engine checks it between steps, so the
    run ends within one step and keeps everything produced so far."""

    def __init__(self):
        self._flags: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def start(self, session: str) -> threading.Event:
        flag = threading.Event()
        with self._lock:
            old = self._flags.get(session)
            if old is not None:
                old.set()                 # a new run from the same tab ends the previous one
            self._flags[session] = flag
        return flag

    def stop(self, session: str) -> None:
        with self._lock:
            flag = self._flags.get(session)
        if flag is not None:
            flag.set()

    def end(self, session: str, flag: threading.Event) -> None:
        with self._lock:
            if self._flags.get(session) is flag:
                del self._flags[session]

    @contextmanager
    def running(self, request) -> Iterator[threading.Event]:
        """The Stop flag of one run from the visitor's tab (a gr.Request), dropped when the run ends; a
        call with no session (a direct call, not through the page or the API) has a flag of its own."""
        session = request.session_hash if request and request.session_hash else f"call:{uuid.uuid4().hex}"
        flag = self.start(session)
        try:
            yield flag
        finally:
            self.end(session, flag)

    def stop_tab(self, request) -> None:
        """The visitor pressed Stop: end the run of their tab."""
        if request:
            self.stop(request.session_hash)

    def __len__(self) -> int:
        return len(self._flags)


def closed_on_stop(call, flags: StopFlags):
    """On ZeroGPU, `call` (a generator run in the GPU worker, its arguments Gradio's with one gr.Request
    among them) with this process's Stop flag for the visitor looked at as each item goes by: Stop
    closes the call from here, which stops the worker. Elsewhere `call` itself (its own flag stops it).
    The Stop button no longer cancels the event as well: with Gradio's cancel, the cancelled event's
    generator was sometimes never closed and never looked at again (the lab in 2 of 3 two-worker `make
    test` runs on 2026-12-06; Explore's run and the lab, with this flag beside the cancel, in 2 clean
    runs on 2026-12-07: the test's worker log showed no stop sent from the page's process). Without
    the cancel, Gradio keeps asking for items and the flag is seen within a beat."""
    if not ZERO_GPU:
        return call

    @functools.wraps(call)
    def stoppable(*args):
        request = next((a for a in args if hasattr(a, "session_hash")), None)
        with flags.running(request) as flag:
            items = call(*args)
            try:
                for item in items:
                    yield item
                    if flag.is_set():
                        return
            finally:
                items.close()
    return stoppable


class ClientSlots:
    """At most one API run per client at a time, so that one script cannot take every run slot.

    A client is its session (each gradio_client `Client` has one) and its address: a script that
    opens many sessions from one address still gets one slot. The address is one nobody in front of
    the app can write: behind `hops` trusted proxies (TBT_TRUSTED_PROXIES; 1 on a Hugging Face
    Space, whose proxy appends the address it saw to X-Forwarded-For), the address the `hops`-th
    entry from the right of X-Forwarded-For reports; everything left of it is whatever the caller
    sent, and is never read. With no proxy declared the header is not read at all and the address is
    the connection's own, unless that is this machine (the host's own scripts and tests: their
    sessions are their slots). A second call while the first runs is refused at once with a
    message, so it does not sit in the queue in front of other visitors either."""

    LOCAL = ("127.0.0.1", "::1", "localhost")

    def __init__(self, hops: int | None = None):
        self._busy: set[str] = set()
        self._lock = threading.Lock()
        self.hops = environment.trusted_proxies() if hops is None else max(0, hops)

    def address(self, request) -> str | None:
        """The client's address as the trusted proxies (or the connection) report it; None: none to key on."""
        client = getattr(request, "client", None)
        peer = getattr(client, "host", None) or None
        if self.hops:
            entries = [e.strip() for e in (request.headers or {}).get("x-forwarded-for", "").split(",")]
            entries = [e for e in entries if e]
            if len(entries) >= self.hops:
                return entries[-self.hops]
            # fewer entries than proxies: the call did not come through them all; its own connection
        return None if peer in self.LOCAL else peer

    def keys(self, request) -> list[str]:
        if request is None:            # a direct call (not through the API): nobody's slot but its own
            return [f"call:{uuid.uuid4().hex}"]
        keys = [f"session:{request.session_hash or uuid.uuid4().hex}"]
        if (address := self.address(request)) is not None:
            keys.append(f"address:{address}")
        return keys

    @contextmanager
    def hold(self, request, busy_message: str) -> Iterator[None]:
        keys = self.keys(request)
        with self._lock:
            if any(k in self._busy for k in keys):
                raise RunRefused(busy_message)
            self._busy.update(keys)
        try:
            yield
        finally:
            with self._lock:
                self._busy.difference_update(keys)


class RunRefused(Exception):
    """A client asked for a second run while its first is in flight (said as err_busy)."""
    key, values = "busy", {}


API_SLOTS = ClientSlots()          # shared by /trace and /compare
BUSY = ("this client already has a run in progress; one run at a time per client "
        "(wait for the previous /trace or /compare call to return)")


# How long a closed background job is waited for once cancelled: the work checks `cancel` between
# passes or repeats (a lab run's model pass, an evaluation question, a back-room child killed at
# once), so it ends in seconds; past this the caller goes on and the thread (a daemon) is left to
# end, logged.
CANCEL_WAIT_S = 30.0
# On ZeroGPU a Stop reaches the worker only as an item goes by: the cancelled handler in the page's
# process is closed when its next item arrives, and the worker looks at the stop event after the
# one after that. A job with no news for a while (a lab repeat on a loaded CPU: 5-10 s each) would
# keep a pressed Stop waiting two repeats, so there it repeats its progress at least this often.
BEAT_S = 1.0 if ZERO_GPU else None


def background(work, cancel: threading.Event, each, every: float = 0.5, cancel_wait_s: float | None = None,
               beat_s: float | None = BEAT_S):
    """Run `work(progress)` on a thread of this process; a generator that yields `each(fraction,
    text)` when the progress has changed (looking every `every` seconds), and also when `beat_s`
    passed without news if it is set, and returns work's result.

    Closing it early (on ZeroGPU the page's process closes the GPU call on Stop, closed_on_stop: the only
    signal that reaches the worker) sets `cancel`, which lives in this process, and waits for the work
    to stop (engine/lab: before its next pass).
    Locks the work needs are taken inside `work`: Gradio may resume a generator on another thread,
    and a lock must be released by the thread that took it."""
    box: dict = {}
    latest = [0.0, ""]

    def progress(fraction: float, text: str) -> None:
        latest[:] = [fraction, text]

    def target():
        try:
            box["result"] = work(progress)
        except BaseException as exc:       # re-raised below, in the caller's thread
            box["error"] = exc
    thread = threading.Thread(target=target, daemon=True, name="tbt-background")
    thread.start()
    shown, said_at = None, time.monotonic()
    try:
        while thread.is_alive():
            thread.join(every)
            beat = beat_s is not None and time.monotonic() - said_at >= beat_s
            if thread.is_alive() and (latest != shown or beat):
                # only news (and ZeroGPU's beat): a back-room job standing still for a visitor's
                # run sends none, and the page (and the server streaming to it) stays quiet meanwhile
                shown, said_at = list(latest), time.monotonic()
                yield each(*latest)
    finally:
        if thread.is_alive():            # closed early
            cancel.set()
            thread.join(CANCEL_WAIT_S if cancel_wait_s is None else cancel_wait_s)
            if thread.is_alive():
                log.warning("a cancelled background job did not stop within %.0f s; left to end on its own",
                            CANCEL_WAIT_S if cancel_wait_s is None else cancel_wait_s)
    if "error" in box:
        raise box["error"]
    return box["result"]


class TempFolder:
    """A folder of files for download under the system's temp folder, made on first use (importing
    a module or building the page makes none) and removed when the process exits."""

    def __init__(self, prefix: str, keep: int = 64):
        self.prefix, self.keep = prefix, keep
        self._path: Path | None = None
        self._lock = threading.Lock()

    @property
    def made(self) -> bool:
        return self._path is not None

    def path(self) -> Path:
        with self._lock:
            if self._path is None or not self._path.is_dir():
                self._path = Path(tempfile.mkdtemp(prefix=f"tbt-{self.prefix}-"))
                atexit.register(shutil.rmtree, self._path, True)
            return self._path

    def fresh(self) -> Path:
        """A new folder inside (one download's files); the oldest files beyond `keep` are deleted."""
        root = self.path()
        with self._lock:
            files = sorted(root.glob("*/*"), key=lambda p: p.stat().st_mtime)
            for old in files[:max(0, len(files) - self.keep + 1)]:     # room for one more
                old.unlink(missing_ok=True)
            stale = time.time() - 60       # an empty folder a minute old: its files were deleted
            for empty in (d for d in root.iterdir() if d.is_dir() and d.stat().st_mtime < stale):
                if not any(empty.iterdir()):
                    empty.rmdir()
        folder = root / uuid.uuid4().hex[:12]
        folder.mkdir()
        return folder


class KeptFiles:
    """JSON files written for visitors to download; the oldest are deleted beyond `keep`. The folder
    is made by the first write."""

    def __init__(self, prefix: str, keep: int = 64):
        self.prefix = prefix
        self.place = TempFolder(prefix, keep)
        self.keep = keep
        self._lock = threading.Lock()

    @property
    def folder(self) -> Path:
        return self.place.path()

    def write_text(self, text: str) -> str:
        path = self.folder / f"{self.prefix}-{uuid.uuid4().hex[:12]}.json"
        path.write_text(text, encoding="utf-8")
        with self._lock:
            files = sorted(self.folder.glob(f"{self.prefix}-*.json"), key=lambda p: p.stat().st_mtime)
            for old in files[:-self.keep]:
                old.unlink(missing_ok=True)
        return str(path)

    def write_json(self, data) -> str:
        return self.write_text(json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False))


class TraceFiles(KeptFiles):
    """Trace JSON files written for download."""

    def __init__(self, keep: int = 64):
        super().__init__("trace", keep)

    def write(self, trace: Trace) -> str:
        return self.write_text(trace.to_json())
