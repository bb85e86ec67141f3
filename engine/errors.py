"""Typed errors of the engine. Callers (CLI, app) catch `EngineError` and show its message.

The message is English, for the CLI, the API and the logs. An error a visitor can cause also
carries `key` and `values`: the page says it in the visitor's language from its catalogue
(assets/strings/, key `err_<key>`, with `values` as the placeholders).
"""


class EngineError(Exception):
    """Base of every error the engine raises on purpose. The message is meant for a person."""

    def __init__(self, message: str, key: str | None = None, **values):
        super().__init__(message)
        self.key = key
        self.values = values

    def __reduce__(self):   # keeps key and values across a process boundary (the back room pickles results)
        return (_rebuild, (type(self), str(self), self.key, self.values))


def _rebuild(cls, message, key, values):
    return cls(message, key, **values)


class InvalidRequest(EngineError, ValueError):
    """A request (prompt or setting) was rejected before any model work."""


class ModelLoadError(EngineError):
    """A model could not be resolved or loaded (missing path, unknown id, needs remote code...)."""


class TraceFormatError(EngineError, ValueError):
    """A trace JSON document could not be read: wrong schema, truncated, wrong types, too large."""
