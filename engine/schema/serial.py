"""Dataclass tree <-> JSON: read through pydantic, strict, its errors said as TraceFormatErrors.

The file's dataclasses (schema/trace.py, schema/floor.py) are the model: pydantic validates JSON
straight into them (`TypeAdapter`, strict JSON mode: an integer is no 1.0 or "1", a flag no 1, a
number finite; `bytes` are base64 text), so a malformed file fails here naming the field instead of
somewhere deep inside a chart. What pydantic cannot know stays ours: the size cap before any byte
is parsed, the file's header checked before its fields (a stranger's file is "not ours", not a list
of missing fields), and the cross-field checks of schema/validate.py.

Writing stays `json.dumps` over `to_plain`: pydantic's JSON mode would write NaN as null, where the
writer must refuse it (allow_nan=False).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from typing import Any, Callable, NotRequired

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from engine.errors import TraceFormatError

# The file's config, on its top dataclass (pydantic carries it to the nested ones).
FILE = ConfigDict(strict=True, allow_inf_nan=False, val_json_bytes="base64", ser_json_bytes="base64")


def to_plain(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    return obj


@functools.cache
def _adapter(tp) -> TypeAdapter:
    return TypeAdapter(tp)


@functools.cache
def _head(keys: tuple[str, ...]) -> TypeAdapter:
    return TypeAdapter(TypedDict("Head", {key: NotRequired[Any] for key in keys}))


def _header(text: str | bytes, keys: tuple[str, ...]):
    """The file's top-level `keys` (a TypedDict of them: pydantic parses the rest without keeping it),
    or the top-level value itself where it is no object."""
    try:
        return _head(keys).validate_json(text)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] == "json_invalid":
            raise refusal(error, "") from None
        return error["input"]


def read_json(cls, text: str | bytes, max_bytes: int | None = None, header: Callable | None = None,
              keys: tuple[str, ...] = (), path: str = "trace"):
    """A `cls` from a file's JSON text: refused if over `max_bytes` (before it is parsed), if not
    JSON, if `header(head)` raises TraceFormatError (the file is someone else's: `head` holds its
    top-level `keys` only), or if a field is missing or of the wrong kind (TraceFormatError naming
    its path under `path`)."""
    if max_bytes is not None and len(text) > max_bytes:
        size, limit = f"{len(text):,}", f"{max_bytes:,}"
        raise TraceFormatError(f"the file is {size} bytes; the limit is {limit}", "trace_too_big",
                               size=size, limit=limit)
    if header is not None:
        header(_header(text, keys))
    try:
        return _adapter(cls).validate_json(text, strict=True)
    except ValidationError as exc:
        raise refusal(exc.errors()[0], path) from None


def from_plain(tp, value, path: str = "trace"):
    """A `tp` from data already parsed (a back-room job's result), checked as strictly as a file."""
    return read_json(tp, json.dumps(value, allow_nan=True), path=path)


# what each kind of value is, as the English message says it and as the JSON type's name (what the
# visitor's message names in any language)
EXPECTED = {"list_type": ("a list", "array"), "dataclass_type": ("an object", "object"),
            "dict_type": ("an object", "object"), "bool_type": ("true/false", "boolean"),
            "int_type": ("an integer", "integer"), "float_type": ("a finite number", "number"),
            "finite_number": ("a finite number", "number"), "string_type": ("a string", "string"),
            "bytes_type": ("base64 text", "string (base64)")}


def where(loc: tuple, path: str) -> str:
    """pydantic's location as the file's path: ('steps', 0, 'id') under "trace" is trace.steps[0].id."""
    return path + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def refusal(error: dict, path: str) -> TraceFormatError:
    """pydantic's first error as today's TraceFormatError (key, values and English message)."""
    kind, loc = error["type"], error["loc"]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, TraceFormatError):            # the header's own refusal
        return cause
    if kind == "json_invalid":
        detail = error["msg"].removeprefix("Invalid JSON: ")[:200]
        return TraceFormatError(f"not valid JSON: {detail}", "trace_not_json", detail=detail)
    if kind == "missing":
        at, name = where(loc[:-1], path), repr(loc[-1])
        return TraceFormatError(f"{at}: missing field {name}", "trace_missing_field", where=at, field=name)
    at = where(loc, path)
    if kind in EXPECTED:
        what, expected = EXPECTED[kind]
        got = type(error["input"]).__name__
        return TraceFormatError(f"{at}: expected {what}, got {got}", "trace_wrong_type", where=at,
                                expected=expected, got=got)
    if kind == "bytes_invalid_encoding":
        return TraceFormatError(f"{at}: invalid base64", "trace_bad_base64", where=at)
    detail = error["msg"][:200]
    return TraceFormatError(f"{at}: {detail}", "trace_field", where=at, detail=detail)
