"""Each weight format of the weights experiment (engine/lab/weights.py) as a model to run: the
engine's own when it already is that format, else a fresh copy loaded (fp32, bf16) or quantized
(bitsandbytes' int8 and nf4 through transformers' BitsAndBytesConfig; our int8 weight-only)."""

from __future__ import annotations

import contextlib
import importlib.util
import logging

import torch

from engine.lab import int8_weight_only
from engine.lab.measure import is_cuda
from engine.model.core import Engine
from engine.model.loading import load

KERNEL = "sdpa"


class Unavailable(Exception):
    """This format cannot run on this device; `code` names the case for the page, the message says why."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code


@contextlib.contextmanager
def quiet_bitsandbytes():
    """bitsandbytes logs one line per int8 matmul on fp32 inputs; keep the log readable."""
    logger = logging.getLogger("bitsandbytes")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _compute_dtype(engine: Engine) -> torch.dtype:
    return torch.bfloat16 if is_cuda(engine.device) else torch.float32


def quantization_config(fmt: str, engine: Engine):
    if importlib.util.find_spec("bitsandbytes") is None:
        raise Unavailable("bnb_missing", "the bitsandbytes package is not installed")
    from transformers import BitsAndBytesConfig
    if fmt == "int8":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_compute_dtype=_compute_dtype(engine))


def obtain(engine: Engine, fmt: str):
    """(model, shared): the engine's own model when it already is that format, else a fresh copy."""
    own = engine.info.quantization in (None, "gguf-q4_1 (dequantized)")
    if fmt == int8_weight_only.NAME:
        model, _ = obtain(engine, "bf16")
        if model is engine.model:      # never quantize the engine's own model in place
            raise Unavailable("load", "the engine's model is bf16 already; load it as fp32 to compare")
        return int8_weight_only.quantize(model), False
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}.get(fmt)
    if own and dtype is not None and engine.model.dtype == dtype:
        return engine.model, True
    if not is_cuda(engine.device) and fmt == "bf16" and not _cpu_bf16_ok():
        raise Unavailable("bf16_cpu", "this CPU and PyTorch build cannot run bfloat16 matmuls")
    kwargs = {"device": str(engine.device), "attn_implementation": KERNEL}
    try:
        if dtype is not None:
            loaded = load(engine.info.id, dtype="float32" if fmt == "fp32" else "bfloat16", **kwargs)
        else:
            loaded = load(engine.info.id, dtype="float32" if not is_cuda(engine.device) else "bfloat16",
                          quantization_config=quantization_config(fmt, engine),
                          device_map=str(engine.device), **kwargs)
    except Exception as exc:             # EngineError, or a library's own error on this device
        raise Unavailable("load", f"it could not be loaded here: {str(exc)[:300]}") from None
    return loaded.model, False


def _cpu_bf16_ok() -> bool:
    try:
        x = torch.ones(4, 4, dtype=torch.bfloat16)
        return bool((x @ x)[0, 0] == 4)
    except RuntimeError:
        return False


def bitsandbytes_version() -> str | None:
    if importlib.util.find_spec("bitsandbytes") is None:
        return None
    from importlib.metadata import version
    return version("bitsandbytes")
