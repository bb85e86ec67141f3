"""Experiment 4: roofline lower bounds for TTFT and TPOT, next to what was measured here.

A pass can finish no sooner than its arithmetic at the hardware's peak FLOP/s, and no sooner than
the time to read its bytes at the hardware's memory bandwidth:
  TTFT ≥ max(prefill FLOPs / peak FLOP/s, weight bytes / bandwidth)
  TPOT ≥ (weight bytes + KV cache bytes) / bandwidth        (decode reads everything once per token)
Prefill FLOPs ≈ 2 · matmul parameters · T  +  2 · vocab · hidden  +  4 · layers · T² · heads · head_dim:
2 FLOPs per weight per token for every weight matrix of the layers (the embedding table is a lookup,
not a matmul), the output head for the last position only (what is needed for the next token), and
Q·Kᵀ plus attention·V over the full T × T square, as eager and SDPA compute it. Bytes: every weight
once, except the input embedding table of an untied model (only the prompt's rows are read).
For this model on this machine the bound stands next to a measurement and the ratio
measured / bound; every other row is a projection from public numbers, flagged as such.
The measurement (bandwidth, FLOP/s and a greedy generation with SDPA attention) runs with the
engine held exclusively; only forward passes are on the clock.
"""

from __future__ import annotations

import os
import threading

import torch

from engine.model.core import Engine
from engine.schema.specs import PUBLIC_MODELS, dtype_bytes, kv_bytes, short_name
from engine.lab.kernels import prompt_ids
from engine.lab import host
from engine.lab.measure import Steps, Stopped, attention, greedy_timing, is_cuda, medians

# Datasheet numbers (dense, no sparsity), per GPU:
#   V100 SXM2 32GB: 900 GB/s HBM2, 125 TFLOP/s fp16 Tensor Core
#     (NVIDIA Tesla V100 datasheet, https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf)
#   A100 SXM 80GB: 2,039 GB/s HBM2e, 312 TFLOP/s bf16 Tensor Core
#     (NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)
#   H100 SXM 80GB: 3.35 TB/s HBM3, 989 TFLOP/s bf16 Tensor Core dense (1,979 is with sparsity)
#     (NVIDIA H100 datasheet, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)
#   H200 SXM 141GB: 4.8 TB/s HBM3e, 989 TFLOP/s bf16 Tensor Core dense (1,979 is with sparsity)
#     (NVIDIA H200 datasheet, https://www.nvidia.com/en-us/data-center/h200/)
DATASHEET = (
    {"name": "V100 SXM2", "bandwidth_bytes_s": 900e9, "peak_flops": 125e12, "memory_bytes": 32e9,
     "precision": "fp16"},
    {"name": "A100 SXM 80GB", "bandwidth_bytes_s": 2039e9, "peak_flops": 312e12, "memory_bytes": 80e9,
     "precision": "bf16"},
    {"name": "H100 SXM", "bandwidth_bytes_s": 3350e9, "peak_flops": 989e12, "memory_bytes": 80e9,
     "precision": "bf16"},
    {"name": "H200 SXM", "bandwidth_bytes_s": 4800e9, "peak_flops": 989e12, "memory_bytes": 141e9,
     "precision": "bf16"},
)
SIZES = {False: {"prompt_tokens": 128, "new_tokens": 16, "repeats": 3},
         True: {"prompt_tokens": 32, "new_tokens": 4, "repeats": 2}}
KERNEL = "sdpa"
HELD_FOR = "roofline"   # the experiment's name: the page says it in its own language
FLOPS_FORMULA = ("2*(params - vocab*hidden*(1 if tied else 2))*T + 2*vocab*hidden "
                 "+ 4*layers*T^2*heads*head_dim")
# Vocabulary size and tied input/output embeddings of the public models in engine/schema/specs.py, from
# each model's config.json on its hub page (vocab_size, tie_word_embeddings). A model missing here
# falls back to 2 · parameters · T.
EMBEDDINGS = {"Llama-3.1-8B": (128256, False), "Qwen3-32B": (151936, False), "Llama-3.1-70B": (128256, False)}


def prefill_flops(model: dict, tokens: int) -> float:
    table = model.get("vocab", 0) * model.get("hidden_size", 0)        # one embedding matrix
    matmul_params = model["parameters"] - table * (1 if model.get("tied", True) else 2)
    return (2 * matmul_params * tokens + 2 * table
            + 4 * model["layers"] * tokens ** 2 * model["heads"] * model["head_dim"])


def bounds(model: dict, hardware: dict, prompt_tokens: int, new_tokens: int) -> dict:
    """Lower bounds for one model config on one hardware (all in ms). `model` carries parameters,
    layers, heads, kv_heads, head_dim and bytes_per_value (weights and KV cache alike)."""
    bpv = model["bytes_per_value"]
    full = model.get("weight_bytes") or model["parameters"] * bpv
    weights = full                       # bytes one pass must read
    if not model.get("tied", True):      # an untied input table is looked up, not read whole
        weights -= model.get("vocab", 0) * model.get("hidden_size", 0) * bpv
    flops = prefill_flops(model, prompt_tokens)
    compute_ms = flops / hardware["peak_flops"] * 1000
    read_ms = weights / hardware["bandwidth_bytes_s"] * 1000
    # decode reads the cache as it stands: on average the prompt plus half the new tokens
    context = prompt_tokens + new_tokens // 2
    cache = kv_bytes(model["layers"], model["kv_heads"], model["head_dim"], context, bpv)
    return {
        "prefill_flops": flops, "weight_bytes": int(full), "weight_bytes_read": int(weights),
        "kv_bytes": int(cache),
        "decode_context_tokens": context,
        "ttft_compute_ms": compute_ms, "ttft_memory_ms": read_ms,
        "ttft_bound_ms": max(compute_ms, read_ms),
        "ttft_bound_by": "compute" if compute_ms >= read_ms else "memory",
        "tpot_bound_ms": (weights + cache) / hardware["bandwidth_bytes_s"] * 1000,
        "fits_in_memory": full + cache <= hardware["memory_bytes"],
    }


def this_machine(engine: Engine) -> dict:
    """The hardware the app runs on, measured: read bandwidth and matmul FLOP/s in the model's dtype,
    the host's one measurement (engine/lab/host.py: the batching frontier and the profile divide by
    the same figures)."""
    device, dtype = engine.device, engine.model.dtype
    if is_cuda(device):
        name = torch.cuda.get_device_name(device)
        memory = torch.cuda.get_device_properties(device).total_memory
    else:
        name = f"this machine (CPU, {torch.get_num_threads()} threads)"
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    found = host.figures(device, dtype)
    return {"name": name, "memory_bytes": float(memory), "precision": str(dtype).removeprefix("torch."),
            "measured": True, **found}


def model_configs(engine: Engine) -> list[dict]:
    i = engine.info
    tied = bool(getattr(engine.model.config.get_text_config(), "tie_word_embeddings", False))
    own = {"name": short_name(i.id), "this_model": True, "parameters": i.parameters,
           "layers": i.layers, "heads": i.heads, "kv_heads": i.kv_heads, "head_dim": i.head_dim,
           "vocab": i.vocab_size, "hidden_size": i.hidden_size, "tied": tied}
    public = []
    for s in PUBLIC_MODELS:
        vocab, tied = EMBEDDINGS.get(s.name, (0, True))
        public.append({"name": s.name, "this_model": False, "parameters": s.parameters, "layers": s.layers,
                       "heads": s.heads, "kv_heads": s.kv_heads, "head_dim": s.head_dim, "vocab": vocab,
                       "hidden_size": s.hidden_size, "tied": tied})
    return [own] + public


def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None) -> dict:
    size = SIZES[quick]
    p, n, repeats = size["prompt_tokens"], size["new_tokens"], size["repeats"]
    steps = Steps(progress, cancel, total=3 + repeats)
    partial, machine, measured = False, None, None
    try:
        ids = prompt_ids(engine, p)[0].tolist()
        with engine.exclusive(HELD_FOR), attention(engine.model, KERNEL):
            steps.tick("measuring memory bandwidth and matmul FLOP/s")
            machine = this_machine(engine)
            steps.tick("warm-up")
            greedy_timing(engine.model, ids, 2)
            runs = []
            for r in range(repeats):
                steps.tick(f"measuring TTFT and TPOT, run {r + 1} of {repeats}")
                runs.append(greedy_timing(engine.model, ids, n, cancel=cancel))
        measured = medians(ttft_ms=[r["ttft_ms"] for r in runs],
                           tpot_ms=[sum(r["step_ms"]) / len(r["step_ms"]) for r in runs])
    except Stopped:
        partial = True
    hardware = ([machine] if machine else []) + [{**h, "measured": False} for h in DATASHEET]
    own_dtype = str(engine.model.dtype).removeprefix("torch.")
    rows = []
    for model in model_configs(engine):
        for hw in hardware:
            here = model["this_model"] and hw.get("measured")
            # this model here: its real dtype and footprint; everything else: bf16/fp16 weights
            cfg = {**model, "bytes_per_value": dtype_bytes(own_dtype) if here else 2,
                   "weight_bytes": engine.info.parameter_bytes if here else None}
            row = {"model": model["name"], "hardware": hw["name"], "this_model": model["this_model"],
                   "hardware_measured": bool(hw.get("measured")), "projection": not here,
                   "dtype": own_dtype if here else ("bf16" if hw.get("measured") else hw["precision"]),
                   "prompt_tokens": p, "new_tokens": n,
                   **bounds(cfg, hw, p, n)}
            if here and measured:
                row.update(measured_ttft_ms=measured["ttft_ms"], measured_tpot_ms=measured["tpot_ms"],
                           ttft_ratio=measured["ttft_ms"] / row["ttft_bound_ms"],
                           tpot_ratio=measured["tpot_ms"] / row["tpot_bound_ms"],
                           spread=measured["spread"])
            rows.append(row)
    return {
        "prompt_tokens": p, "new_tokens": n, "repeats": repeats, "warmup_runs": 1, "partial": partial,
        "attn_implementation": KERNEL, "exclusive": True,
        "hardware": hardware, "rows": rows, "flops_formula": FLOPS_FORMULA,
        "tpot_formula": "(weight bytes read + KV bytes at prompt + new/2 tokens) / bandwidth",
        "note": "rows with projection=true are computed from public numbers, not measured; "
                "measured_*: this model on this machine (prefill pass + first argmax; mean decode step)",
    }
