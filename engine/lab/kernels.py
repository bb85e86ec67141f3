"""Experiment 2: attention kernels on prefill of growing length: eager vs SDPA (vs FlashAttention-2).

Eager attention writes the full score matrix softmax(Q·Kᵀ/√d) — heads × T × T numbers per layer —
to memory and reads it back. SDPA (PyTorch's fused scaled_dot_product_attention) and
FlashAttention-2 compute the same result in tiles without storing the whole matrix, so their
memory grows with T, not T². Each pass runs the shared model directly, under the engine's lock,
with its attention implementation switched for that pass only.
"""

from __future__ import annotations

import importlib.util
import threading
import time

import torch

from ..core import Engine
from ..specs import dtype_bytes
from .measure import Steps, Stopped, elapsed_s, is_cuda, medians, peak_bytes, timed_ms

TEXT = ("The history of computing is a story of people who wanted answers faster than they could "
        "work them out by hand. Tables of logarithms, mechanical calculators, punched cards and "
        "vacuum tubes each cut the time from question to answer. ")
LENGTHS = {False: (128, 256, 512, 1024, 2048), True: (32, 64, 128)}
REPEATS = {False: 3, True: 2}
BUDGET_S = {False: 50.0, True: 30.0}   # later lengths are skipped (and said so) past this budget
MIN_LENGTHS = 3                        # always measured, whatever the budget
FA2 = "flash_attention_2"


def flash_attention_status(engine: Engine) -> dict | None:
    """None when FlashAttention-2 can run; else why not (a code for the page, and English text).
    It needs an NVIDIA GPU, the flash-attn package, and fp16/bf16 weights."""
    if not is_cuda(engine.device):
        return {"code": "fa2_no_cuda", "reason": "not available here: FlashAttention-2 needs a CUDA GPU "
                                                 "(this run is on the CPU)"}
    if importlib.util.find_spec("flash_attn") is None:
        return {"code": "fa2_no_package", "reason": "not available here: the flash-attn package is not installed"}
    if engine.model.dtype not in (torch.float16, torch.bfloat16):
        dtype = str(engine.model.dtype).removeprefix("torch.")
        return {"code": "fa2_dtype", "dtype": dtype,
                "reason": f"not available here: FlashAttention-2 needs fp16/bf16 weights, the model is {dtype}"}
    return None


def prompt_ids(engine: Engine, tokens: int) -> torch.Tensor:
    """`tokens` ids of ordinary text (repeated), shape [1, tokens]."""
    unit = engine.encode(TEXT, templated=True)
    ids = engine.encode(TEXT * (tokens // len(unit) + 2), templated=True)[:tokens]
    return torch.tensor([ids], device=engine.device)


def prefill(engine: Engine, ids: torch.Tensor, implementation: str) -> torch.Tensor:
    """One prefill pass (no cache kept) with `implementation`; the last position's logits."""
    with engine.lock, torch.inference_mode(), engine.attention_implementation(implementation):
        out = engine.model(input_ids=ids, use_cache=False, logits_to_keep=1)
        return out.logits[0, -1].float()


def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None,
        lengths: tuple[int, ...] | None = None, repeats: int | None = None,
        budget_s: float | None = None) -> dict:
    limits = getattr(engine, "limits", None)
    if lengths is None and limits is not None:     # the host's cap on lab sizes
        lengths = tuple(n for n in LENGTHS[quick] if n <= limits.lab_max_prompt_tokens) or LENGTHS[quick][:1]
    lengths = lengths or LENGTHS[quick]
    repeats = repeats or REPEATS[quick]
    if budget_s is None:
        budget_s = min(BUDGET_S[quick], limits.lab_seconds) if limits is not None else BUDGET_S[quick]
    fa2_missing = flash_attention_status(engine)
    impls = ["eager", "sdpa"] + ([FA2] if fa2_missing is None else [])
    cfg = engine.model.config.get_text_config()
    value_bytes = dtype_bytes(str(engine.model.dtype).removeprefix("torch."))
    steps = Steps(progress, cancel, total=len(lengths) * len(impls) * (1 + repeats))
    rows, skipped, partial, start, last_cost = [], [], False, time.monotonic(), 0.0
    tolerance = 1e-3 if engine.model.dtype == torch.float32 else 5e-2
    try:
        for i, n in enumerate(lengths):
            # A length costs at least ~2x the one before (attention is T², the rest T): past the
            # first three, skip it when that guess no longer fits the budget, and say so.
            used = elapsed_s(start)
            if i >= MIN_LENGTHS and used + 2.5 * last_cost > budget_s:
                skipped.append({"tokens": n, "code": "budget", "budget_s": budget_s,
                                "previous_s": round(last_cost, 1),
                                "reason": f"skipped to stay within {budget_s:.0f} s "
                                          f"(the previous length took {last_cost:.0f} s)"})
                continue
            ids = prompt_ids(engine, n)
            measured: dict[str, dict] = {}
            for impl in impls:        # first pass of each: the warm-up, with its peak memory recorded
                steps.tick(f"{impl}, {n} tokens: warm-up and peak memory")
                peak, method, logits = peak_bytes(lambda: prefill(engine, ids, impl), engine.device)
                measured[impl] = {"peak_bytes": peak, "memory_method": method, "logits": logits, "ms": []}
            for r in range(repeats):  # interleaved, so a slow moment of the machine hits all alike
                for impl in impls:
                    steps.tick(f"{impl}, {n} tokens: run {r + 1} of {repeats}")
                    ms, _ = timed_ms(lambda: prefill(engine, ids, impl), engine.device)
                    measured[impl]["ms"].append(ms)
            reference = measured["eager"]["logits"]
            for impl in impls:
                m = measured[impl]
                diff = float((m["logits"] - reference).abs().max())
                rows.append({
                    "implementation": impl, "tokens": n, **medians(ms=m["ms"]),
                    "peak_bytes": m["peak_bytes"], "memory_method": m["memory_method"],
                    # one layer's score matrix (batch 1): heads × T × T values; eager stores it
                    "attention_matrix_bytes": cfg.num_attention_heads * n * n * value_bytes,
                    "max_abs_logit_diff_vs_eager": diff,
                    "same_top1_as_eager": bool(m["logits"].argmax() == reference.argmax()),
                    "matches_eager": diff <= tolerance * max(1.0, float(reference.abs().max())),
                })
            last_cost = elapsed_s(start) - used
    except Stopped:
        partial = True
    unavailable = [] if fa2_missing is None else [{"implementation": FA2, **fa2_missing}]
    return {
        "lengths": list(lengths), "measured_lengths": sorted({r["tokens"] for r in rows}),
        "implementations": impls, "unavailable": unavailable, "skipped": skipped,
        "repeats": repeats, "warmup_runs": 1, "partial": partial, "rows": rows,
        "tolerance": tolerance, "dtype": str(engine.model.dtype).removeprefix("torch."),
        "device": str(engine.device), "threads": torch.get_num_threads(),
        "note": "ms: one prefill forward pass (no cache kept, last position's logits only); "
                "peak_bytes: tensor memory allocated during that pass above what was live before",
    }
