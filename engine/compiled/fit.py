"""Whether the compiled decode step (engine/compiled/fast.py) is for this model, asked before any build.

The step is one exported graph over a static cache whose every layer holds the run's whole length,
with the newest query's attention row read from that cache by the engine's own attention function.
So it is not for a model
- whose attention does not run through that function (the engine watches it with eager hooks instead),
- spread over several devices (one graph runs on one),
- with sliding-window layers (a sliding layer's static cache holds its window, not the run: its rows
  and positions are not the step's),
- with a mixture of experts (each token's experts are picked from data: not one exportable graph).
`refusal(engine)` says which, as a keyed EngineError (never raised by the engine's own start: the
engine stays eager and keeps it as `fast_refusal`), or None when the step fits.
"""

from __future__ import annotations

from engine.errors import EngineError


def _sliding(config) -> bool:
    c = config.get_text_config()
    if not getattr(c, "sliding_window", None) or getattr(c, "use_sliding_window", True) is False:
        return False
    types = getattr(c, "layer_types", None)
    return not types or any("sliding" in str(t) for t in types)


def _experts(config) -> bool:
    c = config.get_text_config()
    return bool(getattr(c, "num_experts", None) or getattr(c, "num_local_experts", None))


def spread(model) -> bool:
    """Whether the model is spread over more than one device. `device_map="auto"` leaves an
    `hf_device_map` even when everything went to one GPU ({"": 0}): that model is on one device."""
    devices = set((getattr(model, "hf_device_map", None) or {}).values())
    return len(devices) > 1


def refusal(engine) -> EngineError | None:
    """Why the compiled step is not for `engine`'s model (a keyed EngineError), or None."""
    arch = type(engine.model).__name__
    if engine.capture_via != "sdpa-capture":
        return EngineError(f"the compiled step is not for {arch}: its attention does not run through the engine's "
                           "own function", "compiled_not_ours", model=arch)
    if spread(engine.model):
        return EngineError(f"the compiled step is not for {arch}: the model is spread over several devices",
                           "compiled_devices", model=arch)
    if _sliding(engine.model.config):
        return EngineError(f"the compiled step is not for {arch}: it has sliding-window layers", "compiled_sliding",
                           model=arch)
    if _experts(engine.model.config):
        return EngineError(f"the compiled step is not for {arch}: its mixture of experts picks each token's "
                           "experts from the data", "compiled_experts", model=arch)
    return None
