"""Reading a streamed HTTP response from a model server, bounded in every direction.

A server is a stranger: it may never answer, stall halfway, send one endless line, send far more
than was asked for, or close the stream in the middle of an event. `events` yields the payload of
each server-sent event (`data: ...`) or NDJSON line as it arrives, with its arrival time on the
monotonic clock, and raises ServedError with a sentence a person can act on for each of those.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Iterator

import httpx

from engine.errors import EngineError


class ServedError(EngineError):
    """A model server could not be reached, refused the request, or sent something unusable."""


@dataclass(frozen=True)
class Bounds:
    connect_s: float = 5.0          # reaching the server
    stall_s: float = 30.0           # silence between two pieces of the stream
    total_s: float = 300.0          # the whole request
    max_bytes: int = 8_000_000      # the whole response body
    max_line: int = 1_000_000       # one line of it
    max_events: int = 20_000


class Abort(threading.Event):
    """A cancel event that also cuts the streams registered with it the moment it is set. A plain
    event is seen only when the next bytes arrive, and a request still queued in the server sends
    none: it would hold its connection, and the server would still run it, until its first token.
    A cut connection is a disconnect the server sees at once (llama.cpp's server then drops the
    request, queued or running)."""

    def __init__(self):
        super().__init__()
        self._cuts: list = []
        self._guard = threading.Lock()

    def on_set(self, cut) -> None:
        with self._guard:
            if not self.is_set():
                self._cuts.append(cut)
                return
        cut()

    def set(self) -> None:
        with self._guard:
            super().set()
            cuts, self._cuts = self._cuts, []
        for cut in cuts:
            cut()


def _cut(response) -> None:
    """Shut the response's socket down from another thread (a blocked read then returns)."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _error_text(body: bytes) -> str:
    """The server's own message from an error body (OpenAI-style {"error": {"message"}}, TGI's
    {"error": "..."}, FastAPI's {"detail": ...}), else the body's start."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace").strip()
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return str(err)[:300]
    return str(data)[:300]


def events(url: str, body: dict, sse: bool = True, bounds: Bounds = Bounds(), headers: dict | None = None,
           cancel: threading.Event | None = None) -> Iterator[tuple[float, str]]:
    """POST `body` as JSON to `url` and yield (arrival time in ms on the monotonic clock, payload)
    per event. `sse=False` reads NDJSON (one JSON document per line). Ends at the stream's end or
    at a `[DONE]` event (not yielded)."""
    timeout = httpx.Timeout(connect=bounds.connect_s, read=bounds.stall_s, write=bounds.connect_s,
                            pool=bounds.connect_s)
    start = time.monotonic()
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client, \
                client.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code != 200:
                raw = b""
                for piece in response.iter_bytes():
                    raw += piece
                    if len(raw) > 65_536:
                        break
                said = _error_text(raw) or response.reason_phrase
                raise ServedError(f"{url} answered HTTP {response.status_code}: {said}")
            kind = response.headers.get("content-type", "")
            if sse and "text/event-stream" not in kind:
                raise ServedError(f"{url} did not stream (content-type {kind or 'missing'!r}); is this the right "
                                  f"endpoint, and does the server support streaming?")
            if isinstance(cancel, Abort):
                cancel.on_set(lambda: _cut(response))
            yield from _split(response, url, sse, bounds, start, cancel)
    except httpx.ConnectError as exc:
        raise ServedError(f"cannot reach {url}: {exc}") from None
    except httpx.ConnectTimeout:
        raise ServedError(f"cannot reach {url}: no answer within {bounds.connect_s:g} s") from None
    except httpx.ReadTimeout:
        raise ServedError(f"{url} stalled: nothing for {bounds.stall_s:g} s") from None
    except httpx.RemoteProtocolError as exc:
        raise ServedError(f"{url} broke off the stream: {exc}") from None
    except httpx.HTTPError as exc:
        raise ServedError(f"request to {url} failed: {exc}") from None


def _split(response, url: str, sse: bool, bounds: Bounds, start: float, cancel) -> Iterator[tuple[float, str]]:
    received, count, pending, data = 0, 0, b"", []
    for piece in response.iter_raw():
        now = time.monotonic()
        received += len(piece)
        if received > bounds.max_bytes:
            raise ServedError(f"{url} sent more than {bounds.max_bytes:,} bytes; stopped reading")
        if now - start > bounds.total_s:
            raise ServedError(f"{url} took longer than {bounds.total_s:g} s; stopped reading")
        if cancel is not None and cancel.is_set():
            return
        pending += piece
        *lines, pending = pending.split(b"\n")
        if len(pending) > bounds.max_line:
            raise ServedError(f"{url} sent a line longer than {bounds.max_line:,} bytes")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not sse:
                if line.strip():
                    count += 1
                    yield now * 1000, line
            elif line == "":                        # an event ends at a blank line
                if data:
                    payload, data = "\n".join(data), []
                    if payload.strip() == "[DONE]":
                        return
                    count += 1
                    yield now * 1000, payload
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            # "event:", "id:", "retry:" and ":" comments carry nothing we use
            if count > bounds.max_events:
                raise ServedError(f"{url} sent more than {bounds.max_events:,} events; stopped reading")
    tail = pending.decode("utf-8", "replace").strip()
    if sse and (data or tail.startswith("data:")):
        payload = "\n".join(data + ([tail[5:].strip()] if tail.startswith("data:") else []))
        if payload.strip() != "[DONE]":
            yield time.monotonic() * 1000, payload     # a last event without its blank line
    elif not sse and tail:
        yield time.monotonic() * 1000, tail
