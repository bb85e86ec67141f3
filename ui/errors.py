"""What a visitor sees when something fails inside the server: a fixed sentence and a short
reference, never the exception's own text (paths, URLs, library internals). The details go to
the server log under the same reference, so the host can find them."""

from __future__ import annotations

import logging
import uuid

log = logging.getLogger("token_by_token")

MESSAGE = ("Something went wrong on the server (reference {ref}). Nothing you did caused it; the host "
           "can look the reference up in the server log.")


def reference(where: str, exc: BaseException) -> str:
    """Log `exc` with a new short reference and return that reference."""
    ref = uuid.uuid4().hex[:8]
    log.error("[%s] %s failed", ref, where, exc_info=(type(exc), exc, exc.__traceback__))
    return ref


def internal(where: str, exc: BaseException) -> str:
    """The visitor's message for an unexpected failure of `where`."""
    return MESSAGE.format(ref=reference(where, exc))
