"""Experiment 3: the same model with fp32, bf16, int8 and 4-bit (nf4) weights.

Decoding one token reads every weight once, so smaller weights can mean faster tokens, if the
hardware has a fast kernel for that format, and a slightly different model. For each format:
its weight memory, TTFT and TPOT of a short greedy generation, and its next-token predictions on a
fixed set of texts against fp32 (top-1 agreement at every position, mean KL divergence).

int8 is bitsandbytes' LLM.int8() and nf4 its 4-bit NormalFloat, both through transformers'
BitsAndBytesConfig. A format that cannot run here is reported as unavailable with the reason.

Every format is loaded first, while visitors can still use the engine; then the engine is held
exclusively for the quality passes and the timings, which interleave the formats (fp32, bf16, int8,
nf4, fp32, ...) so a slow moment of the machine hits them all alike. All run plain SDPA attention.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext

import torch

from engine.model.core import Engine
from engine.errors import InvalidRequest
from engine.model.loading import EMBEDDED, embedded_gguf
from engine.schema.trace import Settings
from engine.lab import int8_weight_only
from engine.lab.formats import KERNEL, Unavailable, bitsandbytes_version, obtain, quiet_bitsandbytes
from engine.lab.measure import Steps, Stopped, attention, greedy_timing, medians, release

PROMPT = "Explain in two sentences why the sky is blue."
# The fixed texts the quality numbers are measured on: prose, a story, Chinese, code.
QUALITY_TEXTS = (
    "The sky looks blue because air molecules scatter short wavelengths of sunlight more strongly "
    "than long ones, so blue light reaches our eyes from every direction of the sky.",
    "Xiao Ming went to the supermarket and bought some apples, a loaf of bread and a bottle of milk. "
    "On the way home he met his teacher, who asked him what he was planning to cook.",
    "量子计算利用量子比特的叠加和纠缠来处理信息。与经典比特不同，一个量子比特可以同时处于零和一的叠加状态。",
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
)
FORMATS = ("fp32", "bf16", "int8", "nf4")
OPT_IN = (int8_weight_only.NAME,)     # measured only when asked for (`lab --weight-formats`)
SIZES = {False: {"new_tokens": 16, "repeats": 3}, True: {"new_tokens": 4, "repeats": 2}}
HELD_FOR = "weights"   # the experiment's name: the page says it in its own language


# --- quality: real forward passes, compared position by position ------------------------------
def all_logits(model, ids: list[int], lock=None) -> torch.Tensor:
    """Logits at every position of one text: [T, vocab], float32, on the CPU."""
    with (lock or nullcontext()), torch.inference_mode():
        out = model(input_ids=torch.tensor([ids], device=model.device), use_cache=False)
    return out.logits[0].float().cpu()


def next_token_quality(reference: list[torch.Tensor], candidate: list[torch.Tensor]) -> dict:
    """Top-1 agreement and mean KL(reference ‖ candidate) over every position of every text.

    reference, candidate: one [T, vocab] logits tensor per text, from the same token ids.
    """
    agree, positions, kl_sum = 0, 0, 0.0
    for p, q in zip(reference, candidate, strict=True):
        assert p.shape == q.shape, (p.shape, q.shape)
        log_p, log_q = torch.log_softmax(p.double(), -1), torch.log_softmax(q.double(), -1)
        kl = (log_p.exp() * (log_p - log_q)).sum(-1)          # [T], nats
        agree += int((p.argmax(-1) == q.argmax(-1)).sum())
        positions += p.shape[0]
        kl_sum += float(kl.clamp_min(0).sum())                 # KL ≥ 0; clamp rounding below it
    return {"top1_agreement": agree / positions, "mean_kl": kl_sum / positions, "positions": positions}


# --- speed: measure.greedy_timing, the same loop for every format --------------------------------
def timing_summary(runs: list[dict]) -> dict:
    tpot = [sum(r["step_ms"]) / len(r["step_ms"]) for r in runs if r["step_ms"]]
    rate = [len(r["tokens"]) / (r["ttft_ms"] + sum(r["step_ms"])) * 1000 for r in runs]
    return medians(ttft_ms=[r["ttft_ms"] for r in runs], tpot_ms=tpot, tokens_per_s=rate)


def gguf_reference(engine: Engine) -> dict | None:
    """The size of the original Q4_1 GGUF file the embedded model ships as, for reference."""
    if engine.info.id not in (EMBEDDED, "embedded") or engine.info.source != "embedded-gguf":
        return None
    path = embedded_gguf()
    return {"file": path.name, "bytes": path.stat().st_size, "format": "GGUF Q4_1",
            "note": "the app dequantizes it to float32 at load; this is the download size"}


# --- the experiment ---------------------------------------------------------------------------
def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None,
        formats: tuple[str, ...] = FORMATS, new_tokens: int | None = None,
        repeats: int | None = None) -> dict:
    if "fp32" not in formats[:1]:
        raise InvalidRequest("fp32 comes first: it is the reference for the quality numbers")
    unknown = [f for f in formats if f not in FORMATS + OPT_IN]
    if unknown:
        raise InvalidRequest(f"unknown weight format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS + OPT_IN)}")
    limits = getattr(engine, "limits", None)
    cap = limits.lab_max_parameters if limits is not None else None
    if cap is not None and engine.info.parameters > cap:
        # three more copies of a big host model would not fit beside it: refuse before loading any
        raise InvalidRequest(f"the weights experiment loads extra copies of the model; this host allows that "
                             f"for models up to {cap / 1e9:g}B parameters, and this one has "
                             f"{engine.info.parameters / 1e9:.2f}B (TBT_LAB_MAX_PARAMS)")
    n = new_tokens or SIZES[quick]["new_tokens"]
    repeats = repeats or SIZES[quick]["repeats"]
    texts = [engine.encode(t, templated=True) for t in (QUALITY_TEXTS[:2] if quick else QUALITY_TEXTS)]
    prompt_ids = engine.encode(engine.apply_template(PROMPT, Settings()), templated=True)
    steps = Steps(progress, cancel, total=len(formats) * (3 + repeats))
    models: dict[str, tuple] = {}        # format -> (model, shared with the engine?)
    rows: dict[str, dict] = {}
    partial = False
    try:
        for fmt in formats:              # 1. load: no clock runs and the engine is not held yet
            steps.tick(f"{fmt}: loading the weights")
            try:
                with quiet_bitsandbytes():
                    models[fmt] = obtain(engine, fmt)
            except Unavailable as exc:
                rows[fmt] = {"format": fmt, "available": False, "code": exc.code, "reason": str(exc)}
        with engine.exclusive(HELD_FOR), attention(engine.model, KERNEL), quiet_bitsandbytes():
            measure(engine, models, rows, texts, prompt_ids, n, repeats, steps)
    except Stopped:
        partial = True
    finally:
        copies = [fmt for fmt, (_, shared) in models.items() if not shared]
        models.clear()                   # drop the copies, then give their memory back
        if copies:
            release(engine.device)
    ordered = [rows[f] for f in formats if f in rows and (not rows[f].get("available") or "tpot_ms" in rows[f])]
    fp32 = next((r for r in ordered if r["format"] == "fp32" and r.get("available")), None)
    for row in ordered:
        if row.get("available") and fp32:
            row["same_greedy_tokens_as_fp32"] = row["tokens"] == fp32["tokens"]
            row["memory_vs_fp32"] = row["weight_bytes"] / fp32["weight_bytes"]
    return {
        "formats": list(formats), "rows": ordered, "partial": partial, "new_tokens": n,
        "repeats": repeats, "warmup_runs": 1, "prompt": PROMPT, "prompt_tokens": len(prompt_ids),
        "quality_texts": len(texts), "quality_positions": sum(len(t) for t in texts),
        "gguf": gguf_reference(engine), "bitsandbytes": bitsandbytes_version(),
        "device": str(engine.device), "attn_implementation": KERNEL, "exclusive": True,
        "note": "weight_bytes: model.get_memory_footprint() without buffers; quality: next-token "
                "logits at every position of the fixed texts against fp32; timed: forward passes "
                "only, formats interleaved, the engine held exclusively",
    }


def measure(engine: Engine, models: dict[str, tuple], rows: dict[str, dict], texts: list[list[int]],
            prompt_ids: list[int], n: int, repeats: int, steps: Steps) -> None:
    """2. quality of each loaded format against fp32; 3. warm-up; 4. interleaved timed generations.
    Fills `rows` in place, so what was measured before a Stop is kept."""
    reference = None
    for fmt in list(models):
        model, shared = models[fmt]
        steps.tick(f"{fmt}: quality on {len(texts)} texts")
        try:
            logits = [all_logits(model, ids) for ids in texts]
            if reference is None:        # fp32 comes first: it compares against a second, separate pass
                reference, logits = logits, [all_logits(model, ids) for ids in texts]
        except Exception as exc:         # e.g. a kernel missing for this device
            rows[fmt] = {"format": fmt, "available": False, "code": "forward",
                         "reason": f"its forward pass fails on {engine.device}: {str(exc)[:200]}"}
            del models[fmt]
            continue
        rows[fmt] = {"format": fmt, "available": True, "shared_model": shared,
                     "dtype": str(model.dtype).removeprefix("torch."),
                     "weight_bytes": int(model.get_memory_footprint(return_buffers=False)),
                     **next_token_quality(reference, logits)}
    for fmt, (model, _) in models.items():
        steps.tick(f"{fmt}: warm-up")
        greedy_timing(model, prompt_ids, 2)
    runs: dict[str, list[dict]] = {fmt: [] for fmt in models}
    for r in range(repeats):             # interleaved: fp32, bf16, int8, nf4, fp32, ...
        for fmt, (model, _) in models.items():
            steps.tick(f"{fmt}: generation {r + 1} of {repeats}")
            runs[fmt].append(greedy_timing(model, prompt_ids, n, cancel=steps.cancel))
            rows[fmt].update(timing_summary(runs[fmt]), tokens=runs[fmt][0]["tokens"])
