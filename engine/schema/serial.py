"""Dataclass tree <-> plain JSON data, driven by the type hints, strict on the way in.

Reading checks every value against its declared type, so a malformed trace fails here with a
TraceFormatError naming the field, instead of somewhere deep inside a chart.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import math
import types
import typing

from engine.errors import TraceFormatError


def parse(text: str | bytes, max_bytes: int | None = None):
    """A file's JSON data, refused if it is over `max_bytes` or not JSON (before any field is read)."""
    if max_bytes is not None and len(text) > max_bytes:
        size, limit = f"{len(text):,}", f"{max_bytes:,}"
        raise TraceFormatError(f"the file is {size} bytes; the limit is {limit}", "trace_too_big",
                               size=size, limit=limit)
    try:
        return json.loads(text)
    except UnicodeDecodeError as exc:       # a picture, an archive: bytes that are not text at all
        detail = f"its bytes are not UTF-8 text (byte 0x{exc.object[exc.start:exc.start + 1].hex()} at {exc.start:,})"
        raise TraceFormatError(f"not valid JSON: {detail}", "trace_not_json", detail=detail) from None
    except (ValueError, RecursionError) as exc:
        detail = str(exc)[:200]
        raise TraceFormatError(f"not valid JSON: {detail}", "trace_not_json", detail=detail) from None


def to_plain(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    return obj


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def from_plain(tp, value, path: str = "trace"):
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        (inner,) = [t for t in options if t is not type(None)]
        return from_plain(inner, value, path)
    if origin is list:
        (inner,) = typing.get_args(tp)
        _expect(isinstance(value, list), path, "a list", value)
        return [from_plain(inner, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        _expect(isinstance(value, dict), path, "an object", value)
        hints, kwargs = _hints(tp), {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = from_plain(hints[f.name], value[f.name], f"{path}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise TraceFormatError(f"{path}: missing field {f.name!r}", "trace_missing_field", where=path,
                                       field=repr(f.name))
        try:
            return tp(**kwargs)
        except (ValueError, TypeError) as exc:
            raise TraceFormatError(f"{path}: {exc}", "trace_field", where=path, detail=str(exc)) from None
    if tp is bool:
        _expect(isinstance(value, bool), path, "true/false", value)
    elif tp is int:
        _expect(isinstance(value, int) and not isinstance(value, bool), path, "an integer", value)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        _expect(ok, path, "a finite number", value)
        return float(value)
    elif tp is str:
        _expect(isinstance(value, str), path, "a string", value)
    elif tp is bytes:
        _expect(isinstance(value, str), path, "base64 text", value)
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise TraceFormatError(f"{path}: invalid base64", "trace_bad_base64", where=path) from None
    else:  # pragma: no cover - a type the trace does not use
        raise TypeError(f"unsupported type {tp!r} at {path}")
    return value


# what `_expect` asked for, as the JSON type's name (what the visitor's message names in any language)
JSON_TYPES = {"a list": "array", "an object": "object", "true/false": "boolean", "an integer": "integer",
              "a finite number": "number", "a string": "string", "base64 text": "string (base64)"}


def _expect(ok: bool, path: str, what: str, value) -> None:
    if not ok:
        got = type(value).__name__
        raise TraceFormatError(f"{path}: expected {what}, got {got}", "trace_wrong_type", where=path,
                               expected=JSON_TYPES[what], got=got)
