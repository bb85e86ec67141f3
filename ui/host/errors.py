"""What a visitor reads when something is refused or fails, in the page's language.

Every refusal goes through here: an engine error that carries a `key` is said from the catalogue
(assets/strings/errors.json, `err_<key>`, its `values` as the placeholders); one without a key
keeps its English message. The page's and the API's own refusals name their key directly
(`refuse`). English is the engine's own message, so the CLI, the API and the logs read the same.

An unexpected failure is a fixed sentence and a short reference, never the exception's own text
(paths, URLs, library internals). The details go to the server log under the same reference, so
the host can find them.
"""

from __future__ import annotations

import logging
import re
import uuid

import gradio as gr

from viz.text.strings import errors, said

log = logging.getLogger("token_by_token")
ERRORS = errors()


def say(key: str, lang: str, **values) -> str:
    """The catalogue's sentence `err_<key>` in `lang`, its placeholders filled (a setting's `name` in
    the visitor's words)."""
    if "name" in values:
        values["name"] = setting_of(str(values["name"]), lang)
    return said(ERRORS[f"err_{key}"], lang).format(**values)


def part_of(where: str, lang: str) -> str:
    """The part of a file that a field's path points into, in words: "trace.summary.stop_reason" is
    the summary ("汇总部分"). A visitor reads that; the path itself stays in the English message."""
    path = str(where).removeprefix("trace.").removeprefix("floor.")
    head = re.split(r"[.\[]", path, maxsplit=1)[0]
    head = "header" if head in HEADER else head
    return said(ERRORS.get(f"err_part_{head}") or ERRORS["err_part_file"], lang)


HEADER = ("schema", "created", "run_id", "format", "version")      # a file's own name and date


def setting_of(name: str, lang: str) -> str:
    """A setting or argument in the visitor's words ("top_p" is "top-p 值"); the name itself where the
    catalogue has no words for it. The English message keeps the name: an API caller's own word."""
    entry = ERRORS.get(f"err_setting_{name}")
    return said(entry, lang) if entry else name


def message(exc: BaseException, lang: str, plain: bool = False) -> str:
    """What the visitor reads for `exc`: its catalogue sentence in `lang` when it has a key, else
    its own (English) message. The catalogue's sentences name no field and quote no value's repr
    (a file's refusal says which part of it is wrong); the English message, with the field's path,
    is what the API's English callers read, and what the log keeps when the visitor reads another
    language. `plain`: the catalogue's sentence in English too (the page's own boxes: a visitor reads
    one plain sentence there, never a field path or a parser's words)."""
    key = getattr(exc, "key", None)
    if (lang == "en" and not plain) or not key or f"err_{key}" not in ERRORS:
        return str(exc)
    values = dict(exc.values)
    if "where" in values:
        values["part"] = part_of(values["where"], lang)

    try:
        said_here = say(key, lang, **values)
    except (KeyError, IndexError, ValueError):     # a sentence and its error out of step: still say something
        log.warning("err_%s does not take the values %s", key, sorted(exc.values))
        return str(exc)
    log.info("refused in %s (err_%s): %s", lang, key, exc)
    return said_here


def refuse(key: str, lang: str, **values) -> gr.Error:
    """A refusal of the page or the API, to raise: its sentence in `lang`, under a title in `lang`."""
    return gr.Error(say(key, lang, **values), title=say("error_title", lang), print_exception=False)


def refused(exc: BaseException, lang: str) -> gr.Error:
    """An engine error as the visitor reads it (`message`), to raise."""
    return gr.Error(message(exc, lang), title=say("error_title", lang), print_exception=False)


def reference(where: str, exc: BaseException) -> str:
    """Log `exc` with a new short reference and return that reference."""
    ref = uuid.uuid4().hex[:8]
    log.error("[%s] %s failed", ref, where, exc_info=(type(exc), exc, exc.__traceback__))
    return ref


def internal(where: str, exc: BaseException, lang: str = "en") -> str:
    """The visitor's message for an unexpected failure of `where`."""
    return say("internal", lang, ref=reference(where, exc))
