"""Runs kept for links to them: a bounded, content-addressed store on disk (no torch).

A share link names a run by the hash of its trace JSON, so the same run shared twice is kept once
and a link can never point at a different run than the one it was made from. The store holds at
most `cap_bytes` (TBT_SHARE_MB); when a new run does not fit, the runs read or kept longest ago go
first (a file's modification time is its last use: reading a run touches it). A run read back is
checked again exactly as an uploaded file is (engine.schema.validate.read_trace): the folder is the
host's, but a link's id is the visitor's, and a file may have been edited or cut short on disk.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path

from engine import environment
from engine.environment import Limits
from engine.errors import InvalidRequest, TraceFormatError
from engine.schema.trace import Trace
from engine.schema.validate import read_trace

ID_CHARS = 32                                 # hex digits of the sha256 a link carries (128 bits)
ID = re.compile(rf"[0-9a-f]{{{ID_CHARS}}}")
BAD_ID = "This link names a run this page cannot have made: its run id is not one of ours."
GONE = ("The run this link points to is no longer kept on this server: it keeps the most recently used runs, "
        "up to a size the host sets.")


def run_id(text: str) -> str:
    """The id of a trace's JSON text: the start of its sha256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_CHARS]


class SharedRuns:
    """Trace JSON files named by their content's hash, least recently used dropped beyond the cap."""

    def __init__(self, folder: Path, cap_bytes: int):
        self.folder, self.cap = Path(folder), int(cap_bytes)
        self._lock = threading.Lock()
        self._last_use_ns = 0

    def _used(self, path: Path) -> None:
        """Mark `path` the most recently used: its modification time, strictly later than any mark
        before (two uses within the file system's clock tick still keep their order)."""
        self._last_use_ns = max(time.time_ns(), self._last_use_ns + 1)
        os.utime(path, ns=(self._last_use_ns, self._last_use_ns))

    def keep(self, trace: Trace) -> str:
        """Keep `trace` (if it is not kept already) and return its id."""
        text = trace.to_json()
        size = len(text.encode("utf-8"))
        if size > self.cap:
            mb, cap = f"{size / 1e6:.1f}", f"{self.cap / 1e6:.0f}"
            raise InvalidRequest(f"This run is {mb} MB; the host keeps runs for links up to {cap} MB in all, so it "
                                 "cannot be linked to. Download its trace instead.", "share_too_big", mb=mb, cap=cap)
        key = run_id(text)
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self._path(key)
            if path.exists():
                self._used(path)                   # kept again: the most recently used
                return key
            self._make_room(size)
            partial = path.with_suffix(".part")
            partial.write_text(text, encoding="utf-8")
            partial.replace(path)                  # whole or not at all: a reader never sees half a file
            self._used(path)
        return key

    def read(self, key: str, limits: Limits | None = None) -> Trace:
        """The run kept as `key`, checked as an upload is. A malformed id and an id whose file is
        gone (dropped for room, another server) are refused with a reason the page can say."""
        if not isinstance(key, str) or not ID.fullmatch(key):
            raise InvalidRequest(BAD_ID, "share_bad_id")
        with self._lock:
            path = self._path(key)
            try:
                data = path.read_bytes()
                self._used(path)
            except OSError:
                raise InvalidRequest(GONE, "share_gone") from None
        if hashlib.sha256(data).hexdigest()[:ID_CHARS] != key:     # changed on disk since it was kept
            raise TraceFormatError(GONE, "share_gone")
        return read_trace(data, limits)

    def used_bytes(self) -> int:
        return sum(p.stat().st_size for p in self._files())

    def ids(self) -> list[str]:
        """The kept ids, least recently used first."""
        return [p.stem for p in self._files()]

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def _files(self) -> list[Path]:
        files = []
        for p in self.folder.glob("*.json"):
            try:
                files.append((p.stat().st_mtime_ns, p))
            except OSError:           # dropped by another thread meanwhile
                pass
        return [p for _, p in sorted(files)]

    def _make_room(self, size: int) -> None:
        """Drop the least recently used runs until `size` more bytes fit under the cap."""
        files = self._files()
        used = sum(p.stat().st_size for p in files)
        for old in files:
            if used + size <= self.cap:
                break
            used -= old.stat().st_size
            old.unlink(missing_ok=True)


_STORE: SharedRuns | None = None


def store() -> SharedRuns:
    """The host's store: TBT_SHARE_DIR, capped by TBT_SHARE_MB."""
    global _STORE
    if _STORE is None:
        _STORE = SharedRuns(environment.share_dir(), Limits.from_env().share_bytes)
    return _STORE
