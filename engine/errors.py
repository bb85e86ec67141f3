"""Typed errors of the engine. Callers (CLI, app) catch `EngineError` and show its message."""


class EngineError(Exception):
    """Base of every error the engine raises on purpose. The message is meant for a person."""


class InvalidRequest(EngineError, ValueError):
    """A request (prompt or setting) was rejected before any model work."""


class ModelLoadError(EngineError):
    """A model could not be resolved or loaded (missing path, unknown id, needs remote code...)."""


class TraceFormatError(EngineError, ValueError):
    """A trace JSON document could not be read: wrong schema, truncated, wrong types, too large."""
