"""The models a host allows, loaded once each; visitors pick only among them.

`TBT_MODELS` (comma-separated hub ids or folders, "embedded" for the built-in SmolLM2) sets the
allow-list; the first is the default. If the default cannot be loaded (no network, no such model,
needs remote code), the app starts on the embedded model and says so on the page.

The app builds and serves the page first and loads the default model after (`Models(load=False)`,
then `load_default`): torch, transformers and the weights take seconds the first view can do
without. Whatever needs the model (`engine`, `get`) waits for it.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections import OrderedDict
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from engine import environment
from engine.errors import EngineError
from engine.environment import Limits
from engine.schema.specs import EMBEDDED, short_name
from viz.text.strings import page_text

from ui.host.errors import internal, reference, refuse
from ui.host.gpu import ZERO_GPU

if TYPE_CHECKING:
    from engine.model.core import Engine

# Cleared while the app's main thread imports torch and transformers for its first model, with the
# page already up: a handler importing them at the same moment can fail (two threads in one
# package's imports: "cannot import name 'AttentionInterface' from 'transformers'"), so handlers
# import the engine's torch side through `torch_side`, which waits for it.
log = logging.getLogger("token_by_token")
_IMPORTED = threading.Event()
_IMPORTED.set()


class StillLoading(EngineError):
    """A model a call needs was still loading when the call's wait ran out (TBT_MODEL_WAIT_S)."""

    def __init__(self, waited_s: float):
        super().__init__(f"the model is still loading after {waited_s:.0f} s; try again in a minute", "model_loading")


def waited(ready, timeout_s: float | None = None) -> None:
    """Wait for `ready` (an Event's `wait` or a Lock's `acquire`) at most the host's model wait, or
    raise StillLoading: no worker thread waits for ever on a load that hangs."""
    limit = environment.model_wait_s() if timeout_s is None else timeout_s
    if not ready(timeout=limit):
        raise StillLoading(limit)


def first_model_loaded(timeout_s: float | None = None) -> None:
    """Until the app's first model is loaded, with its imports (at once everywhere else)."""
    waited(_IMPORTED.wait, timeout_s)


def torch_side(module: str):
    """A module of the engine's torch side, for a handler: imported once the first model's imports
    are done (see _IMPORTED)."""
    first_model_loaded()
    return importlib.import_module(module)


def allowed_from_env(cli_model: str | None = None) -> list[str]:
    """The models visitors may pick, the default first: TBT_MODELS if the host set it, else the
    `--model` of `python app.py`, else the embedded model. A `--model` that TBT_MODELS also lists
    becomes the default; one it does not list is not offered, and the log says so."""
    ids = [EMBEDDED if m == "embedded" else m for m in environment.models()]
    if not ids:
        return [cli_model or EMBEDDED]
    if cli_model in ids:
        return [cli_model, *(m for m in ids if m != cli_model)]
    if cli_model:
        log.warning("--model %s is not in TBT_MODELS (%s): the page offers TBT_MODELS' models", cli_model,
                    ", ".join(ids))
    return ids


def load_engine(model_id: str, limits: Limits | None = None) -> Engine:
    """Hub and local models spread over the GPUs with accelerate when CUDA is there at start; on
    ZeroGPU the model goes to "cuda" whole, as `spaces` requires (its patched CUDA has no devices
    for accelerate to spread over before a GPU function runs)."""
    import torch

    from engine.model.core import Engine
    device_map = "auto" if model_id != EMBEDDED and torch.cuda.is_available() and not ZERO_GPU else None
    engine = Engine.load(None if model_id == EMBEDDED else model_id, limits, device_map=device_map)
    if environment.compile_enabled() and not ZERO_GPU:     # ZeroGPU moves the model to a GPU per call, in a child process
        # the package from disk, or built in the back room (engine/compiled/fast.py): no visitor waits for it
        engine.start_fast()
    return engine


class Models:
    """Loaded engines, at most `max_models` (TBT_MAX_MODELS, default 2) of them: the least recently
    used one that is not the default and has no run in progress makes room for a new one.

    A load takes minutes for a big model, so it never happens under the lock that guards the table:
    visitors of already-loaded models go on while another model loads, and two visitors asking for
    the same new model share one load."""

    def __init__(self, allowed: list[str], max_models: int | None = None, load: bool = True):
        self.allowed = list(dict.fromkeys(allowed))
        self.max_models = max(1, max_models or environment.max_models())
        self.limits = Limits.from_env()                # every engine's: the page shows them before any loads
        self.engines: OrderedDict[str, Engine] = OrderedDict()
        self.fallback: dict | None = None            # the host's default could not be loaded: what the page says
        self.default = self.allowed[0]
        self._lock = threading.Lock()                  # guards the tables, never held while loading
        self._loading: dict[str, threading.Lock] = {}  # one gate per model being loaded
        self._ready = threading.Event()                # the default is loaded (or failed to)
        self._failed: BaseException | None = None
        if load:
            self.load_default()
        else:
            _IMPORTED.clear()

    def notice(self, lang: str = "en") -> str:
        """What the page says when the host's default model could not be loaded ("" when it was)."""
        return page_text("model_fallback", lang).format(**self.fallback) if self.fallback else ""

    def load_default(self) -> None:
        """Load the default model; if it cannot be, the embedded one takes its place."""
        first = self.allowed[0]
        try:
            try:
                engine = load_engine(first, self.limits)
            except EngineError as exc:           # the reason (paths, URLs) goes to the log, not the page
                ref = reference(f"loading {first}", exc)
                self.fallback = {"model": first, "ref": ref, "embedded": short_name(EMBEDDED)}
                engine = load_engine(EMBEDDED, self.limits)
                self.allowed = [EMBEDDED] + [m for m in self.allowed if m not in (first, EMBEDDED)]
            with self._lock:
                self.engines[self.allowed[0]] = engine
                self.default = self.allowed[0]
        except BaseException as exc:
            self._failed = exc
            raise
        finally:
            self._ready.set()
            _IMPORTED.set()

    @property
    def loaded(self) -> bool:
        return self._ready.is_set() and self._failed is None

    def wait(self, lang: str = "en", timeout_s: float | None = None) -> None:
        """Until the default model is loaded (the page may be up before it is), at most the host's
        model wait: then the visitor is told to try again."""
        try:
            waited(self._ready.wait, timeout_s)
        except StillLoading:
            raise refuse("model_loading", lang) from None
        if self._failed is not None:
            raise refuse("model_failed", lang) from None

    def get(self, model_id: str | None, lang: str = "en", timeout_s: float | None = None) -> Engine:
        """The engine for an allowed model, loading it on first use; a refusal is said in `lang`. A call
        that finds another loading the same model waits for that load at most the host's model wait."""
        self.wait(lang, timeout_s)
        model_id = model_id or self.default
        if model_id not in self.allowed:
            raise refuse("model_not_offered", lang, model=repr(model_id)[:80])
        with self._lock:
            if model_id in self.engines:
                self.engines.move_to_end(model_id)
                return self.engines[model_id]
            gate = self._loading.setdefault(model_id, threading.Lock())
        try:
            waited(gate.acquire, timeout_s)             # only callers of this same model wait here
        except StillLoading:
            raise refuse("model_loading", lang) from None
        with ExitStack() as held:
            held.callback(gate.release)
            with self._lock:
                if model_id in self.engines:            # loaded while we waited at the gate
                    return self.engines[model_id]
            try:
                engine = load_engine(model_id)
            except EngineError as exc:
                raise refuse("model_cannot_load", lang, model=model_id,
                             reason=internal(f"loading {model_id}", exc, lang)) from None
            with self._lock:
                self.engines[model_id] = engine
                self._loading.pop(model_id, None)
                self._evict(keep=model_id)
            return engine

    def _evict(self, keep: str) -> None:
        """Drop least recently used engines beyond the cap (lock held by the caller); never the
        default, the one just loaded (`keep`) or one with a run in progress."""
        for model_id in list(self.engines):
            if len(self.engines) <= self.max_models:
                return
            if model_id not in (self.default, keep) and self.engines[model_id].active_runs == 0:
                del self.engines[model_id]      # its runs' traces keep no reference to the model

    @property
    def engine(self) -> Engine:
        self.wait()
        return self.engines[self.default]

    def of_trace(self, trace) -> Engine | None:
        """The loaded engine a trace was recorded with, if this page has it (None: another model's file)."""
        first_model_loaded()         # during start-up the table is empty until then
        return self.engines.get(trace.model.id)

    @contextmanager
    def exclusive(self, reason: str):
        """Hold every loaded engine for a lab experiment: no visitor's run, on any model, shares the
        machine while it times. (Runs hold one engine's lock per forward pass and never two, so
        taking them all in one order cannot deadlock.)"""
        with self._lock:
            engines = list(self.engines.values())
        with ExitStack() as stack:
            for engine in engines:
                stack.enter_context(engine.exclusive(reason))
            yield

