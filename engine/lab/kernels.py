"""Experiment 2: attention kernels on prefill of growing length: eager vs SDPA (vs FlashAttention-2).

Eager attention writes the full score matrix softmax(Q·Kᵀ/√d) — heads × T × T numbers per layer —
to memory and reads it back. SDPA (PyTorch's fused scaled_dot_product_attention) and
FlashAttention-2 compute the same result in tiles without storing the whole matrix, so their
memory grows with T, not T². Each arm sets its implementation by name on the shared model ("eager",
"sdpa", "flash_attention_2"), whatever the engine normally runs, and the one it had is put back at
the end. The switch, the prompt's tokenization and the lock all happen before the clock starts:
a timed call is one forward pass and nothing else, with the engine held exclusively.
"""

from __future__ import annotations

import importlib.util
import threading

import torch

from engine.model.core import Engine
from engine.model.clock import work_s
from engine.schema.specs import dtype_bytes
from engine.lab.measure import Steps, Stopped, attention, elapsed_s, is_cuda, medians, peak_bytes, timed_ms

TEXT = ("The history of computing is a story of people who wanted answers faster than they could "
        "work them out by hand. Tables of logarithms, mechanical calculators, punched cards and "
        "vacuum tubes each cut the time from question to answer. ")
LENGTHS = {False: (128, 256, 512, 1024, 2048), True: (32, 64, 128)}
REPEATS = {False: 3, True: 2}
BUDGET_S = {False: 50.0, True: 30.0}   # later lengths are skipped (and said so) past this budget
MIN_LENGTHS = 3                        # always measured, whatever the budget
FA2 = "flash_attention_2"
HELD_FOR = "attention"   # the experiment's name: the page says it in its own language


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


def prefill(model, ids: torch.Tensor) -> torch.Tensor:
    """One prefill pass (no cache kept) with whatever attention `model` is set to; the last
    position's logits. No lock, no switch: the caller has done both before timing this."""
    with torch.inference_mode():
        return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1].float()


def measure_length(model, ids: torch.Tensor, impls: list[str], repeats: int, steps: Steps,
                   device) -> dict[str, dict]:
    """Warm-up (with its peak memory) then `repeats` interleaved timed passes of every kernel."""
    n, measured = ids.shape[1], {}
    for impl in impls:            # first pass of each: the warm-up, with its peak memory recorded
        steps.tick(f"{impl}, {n} tokens: warm-up and peak memory")
        with attention(model, impl):
            peak, method, logits = peak_bytes(lambda: prefill(model, ids), device)
            measured[impl] = {"peak_bytes": peak, "memory_method": method, "logits": logits, "ms": [],
                              "set": model.config._attn_implementation}
    for r in range(repeats):      # interleaved, so a slow moment of the machine hits all alike
        for impl in impls:
            steps.tick(f"{impl}, {n} tokens: run {r + 1} of {repeats}")
            with attention(model, impl):                          # switched before the clock starts
                ms, _ = timed_ms(lambda: prefill(model, ids), device)
            measured[impl]["ms"].append(ms)
    return measured


def compare(measured: dict[str, dict], n: int, heads: int, value_bytes: int, tolerance: float) -> list[dict]:
    """One row per kernel at length n: its timings and memory, and its logits against eager's."""
    reference = measured["eager"]["logits"]
    rows = []
    for impl, m in measured.items():
        diff = float((m["logits"] - reference).abs().max())
        rows.append({
            "implementation": impl, "implementation_set": m["set"], "tokens": n, **medians(ms=m["ms"]),
            "peak_bytes": m["peak_bytes"], "memory_method": m["memory_method"],
            # one layer's score matrix (batch 1): heads × T × T values; eager stores it
            "attention_matrix_bytes": heads * n * n * value_bytes,
            "max_abs_logit_diff_vs_eager": diff,
            "same_top1_as_eager": bool(m["logits"].argmax() == reference.argmax()),
            "matches_eager": diff <= tolerance * max(1.0, float(reference.abs().max())),
        })
    return rows


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
    value_bytes = dtype_bytes(str(engine.model.dtype))
    steps = Steps(progress, cancel, total=len(lengths) * len(impls) * (1 + repeats))
    rows, skipped, partial, last_cost = [], [], False, 0.0
    tolerance = 1e-3 if engine.model.dtype == torch.float32 else 5e-2
    try:
        with engine.exclusive(HELD_FOR):     # the whole experiment: no visitor between lengths
            start = work_s()                 # the budget counts from here, not from waiting for the lock
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
                measured = measure_length(engine.model, ids, impls, repeats, steps, engine.device)
                rows += compare(measured, n, heads=cfg.num_attention_heads, value_bytes=value_bytes,
                                tolerance=tolerance)
                last_cost = elapsed_s(start) - used
    except Stopped:
        partial = True
    unavailable = [] if fa2_missing is None else [{"implementation": FA2, **fa2_missing}]
    return {
        "lengths": list(lengths), "measured_lengths": sorted({r["tokens"] for r in rows}),
        "implementations": impls, "unavailable": unavailable, "skipped": skipped,
        "repeats": repeats, "warmup_runs": 1, "partial": partial, "rows": rows, "exclusive": True,
        "tolerance": tolerance, "dtype": str(engine.model.dtype).removeprefix("torch."),
        "device": str(engine.device), "threads": torch.get_num_threads(),
        "note": "ms: one prefill forward pass (no cache kept, last position's logits only), the "
                "kernel switched and the engine held before the clock starts; "
                "peak_bytes: tensor memory allocated during that pass above what was live before",
    }
