"""Whether transformers' continuous batching can serve this model at all, asked once per model.

Its paged cache runs only the attention layers written for it: an architecture whose attention calls
the cache another way (GPT-NeoX: `update(key, value, layer)`, without the kwargs the paged cache
fills) fails inside the batching loop, request by request. Rather than read that from names, one
request of four tokens for one new token goes through a continuous-batching manager first (under the
caller's lock, with the floor's kernel already set); if it fails, the floor is refused with a keyed
message ("floor_unsupported") before any way is timed. The answer is kept per model. A model that
cannot run the floor's kernel at all (Gemma 2: eager only) is refused the same way.
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack, contextmanager

from transformers.generation.configuration_utils import ContinuousBatchingConfig

from engine.errors import EngineError
from engine.model.core import switched_kernel

log = logging.getLogger(__name__)
_KNOWN: dict[str, str | None] = {}       # model id -> None (serves) or the failure, in the log's words
PROBE_TOKENS, WAIT_S = 4, 120.0


def _probe(engine) -> str | None:
    """The failure of one tiny continuous-batching request, or None when it is served."""
    from engine.floor.continuous import generation_config
    config = ContinuousBatchingConfig(page_size=16, num_blocks=8, max_batch_tokens=64, use_async_batching=False,
                                      auto_switch_to_flash=False)
    try:
        manager = engine.model.init_continuous_batching(generation_config=generation_config(engine, 1),
                                                        continuous_batching_config=config)
    except Exception as exc:                                       # noqa: BLE001 (the reason is the answer)
        return f"{type(exc).__name__}: {exc}"[:300]
    prompt = [t for t in engine.tokenizer.encode("Hello there, how are you") if t is not None][:PROBE_TOKENS]
    try:
        manager.start()
        manager.add_request(prompt or [0], request_id="fit", max_new_tokens=1)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            out = manager.get_result(timeout=0.2)
            if out is not None and out.is_finished():
                return f"{out.error}"[:300] if out.error else None
            if out is None and not manager.is_running():
                return "the continuous-batching loop ended early"
        return None                  # slow, not broken: the run's own budget decides
    except Exception as exc:                                       # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"[:300]
    finally:
        manager.stop(block=True, timeout=30, hard_stop=True)
        manager.destroy()


@contextmanager
def floor_kernel(engine, kernel: str):
    """The model switched to the floor's kernel for the run (model.core.switched_kernel), or the floor
    refused ("floor_unsupported") for a model that cannot run it (Gemma 2: eager attention only)."""
    switch = ExitStack()
    try:
        switch.enter_context(switched_kernel(engine.model, kernel))
    except ValueError as exc:
        log.warning("the serving floor cannot switch %s to %s: %s", type(engine.model).__name__, kernel, exc)
        raise _refused(engine) from None
    with switch:
        yield


def _refused(engine) -> EngineError:
    arch = type(engine.model).__name__
    return EngineError(f"The serving floor cannot run {arch}: transformers' continuous batching (its paged KV "
                       "cache) does not support this model's attention.", "floor_unsupported", model=arch)


def require(engine) -> None:
    """Raise EngineError "floor_unsupported" when continuous batching cannot serve this model."""
    key = engine.info.id
    if key not in _KNOWN:
        _KNOWN[key] = _probe(engine)
    if _KNOWN[key] is not None:
        log.warning("continuous batching cannot serve %s: %s", type(engine.model).__name__, _KNOWN[key])
        raise _refused(engine)
