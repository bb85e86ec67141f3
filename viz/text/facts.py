"""The numbers the chapters' teaching text quotes, taken from what the page measured or reads.

The walkthrough's narration and each chapter's introduction are fixed text (gr.I18n), but the
numbers in them are not written into the catalogue: they are `{placeholders}` filled here from the
recording the page opens on (its prompt and the model's config), the recorded lab (the roofline's
measured bandwidth and its projections) and the public configs the KV projection uses
(engine/schema/specs.py). `fill` leaves any other `{placeholder}` for its caller.
"""

from __future__ import annotations

import re

from engine.schema.specs import CONTEXTS, PUBLIC_MODELS, dtype_bytes, kv_bytes

from viz.fmt import DASH, fmt_bytes, fmt_ms
from viz.frames import MIN_WEIGHT, context_name
from viz.text import lab_verdicts, verdicts
from viz.text.labels import label

PLACEHOLDER = re.compile(r"\{(\w+)\}")


def fill(text: str, facts: dict[str, str]) -> str:
    """`text` with every `{name}` that `facts` knows replaced; other placeholders stay."""
    return PLACEHOLDER.sub(lambda m: str(facts.get(m.group(1), m.group(0))), text)


def fmt_count(n: float, lang: str) -> str:
    """A large count as people say it: "135 million" / "1.35 亿", "8.03 billion" / "80.3 亿"."""
    if lang == "zh":
        return f"{n / 1e8:.3g} 亿" if n >= 1e8 else f"{n / 1e4:.3g} 万"
    return f"{n / 1e9:.3g} billion" if n >= 1e9 else f"{n / 1e6:.3g} million"


def model_facts(model: dict, prompt_tokens: int, lang: str) -> dict[str, str]:
    """From the recording's model config and prompt: the cache's shape and the largest projection."""
    heads, kv_heads = int(model["heads"]), int(model["kv_heads"])
    big, context = PUBLIC_MODELS[-1], max(CONTEXTS)     # the projection's largest row (Explore → 3)
    return {
        "prompt_tokens": str(prompt_tokens),
        "heads": str(heads), "kv_heads": str(kv_heads),
        "gqa": f"{heads / kv_heads:.3g}",                # how many query heads share one K/V head
        "big_model": big.name,
        "big_context": context_name(context).upper() if lang == "zh" else context_name(context),
        "big_kv": fmt_bytes(kv_bytes(big.layers, big.kv_heads, big.head_dim, context, 2)),   # bf16
        "min_weight": f"{MIN_WEIGHT:g}",
        # the logit lens multiplies every layer's hidden state by the unembedding (hidden x vocab);
        # a decode step does about one multiply-add per parameter
        "lens_ratio": f"{model['layers'] * model['hidden_size'] * model['vocab_size'] / model['parameters']:.2g}",
        # what a run keeps for it instead: every layer's last-position state but the last, float32
        "lens_state": fmt_bytes((model["layers"] - 1) * model["hidden_size"] * 4),
        # the embedding table (vocab x hidden; tied to the output head), which quantization leaves alone
        "embed_share": f"{model['vocab_size'] * model['hidden_size'] / model['parameters']:.0%}",
    }


def speed_facts(lab: dict | None) -> dict[str, str]:
    """From the recorded roofline: the decode floor of this model on this machine (its measured
    bandwidth); the floor of a larger public model on the oldest GPU it projects and on the H100
    (the V100 → H100 step people feel), and the ridge points where a prefill turns compute-bound."""
    roof = (lab or {}).get("roofline") or {}
    rows, hardware = roof.get("rows") or [], roof.get("hardware") or []
    here = next((r for r in rows if r.get("this_model") and r.get("hardware_measured")), None)
    machine = next((h for h in hardware if h.get("measured")), None)
    gpus = [h for h in hardware if not h.get("measured")]
    gpu = gpus[-1] if gpus else None                       # the fastest GPU projected
    old = gpus[0] if gpus else None                         # the oldest (the V100)
    new = next((h for h in gpus if "H100" in h["name"]), gpu)

    def floor_on(hw: dict | None) -> dict | None:          # the first public model's row on `hw`
        return next((r for r in rows if not r.get("this_model") and hw and r.get("hardware") == hw["name"]), None)
    other, on_old, on_new = floor_on(gpu), floor_on(old), floor_on(new)
    tiny_new = next((r for r in rows if r.get("this_model") and new and r.get("hardware") == new["name"]), None)
    ridges = sorted(lab_verdicts.ridge_tokens(h) for h in gpus)
    return {
        "weights": fmt_bytes(here["weight_bytes"]) if here else DASH,
        # beside a bandwidth in GB/s the bytes are said in MB (decimal), and the KV cache a step
        # reads too, so that bytes ÷ bandwidth reads as the bound it is
        "weights_mb": f"{here['weight_bytes_read'] / 1e6:.0f} MB" if here else DASH,
        "kv_read": f"{here['kv_bytes'] / 1e6:.3g} MB" if here else DASH,
        "roof_context": str(here["decode_context_tokens"]) if here else DASH,
        "bandwidth": f"{machine['bandwidth_bytes_s'] / 1e9:.3g} GB/s" if machine else DASH,
        "floor": fmt_ms(here["tpot_bound_ms"]) if here else DASH,
        "speed_model": other["model"] if other else DASH,
        "gpu": gpu["name"] if gpu else DASH,
        "gpu_floor": fmt_ms(other["tpot_bound_ms"]) if other else DASH,
        "old_gpu": old["name"] if old else DASH, "new_gpu": new["name"] if new else DASH,
        "old_floor": fmt_ms(on_old["tpot_bound_ms"]) if on_old else DASH,
        "new_floor": fmt_ms(on_new["tpot_bound_ms"]) if on_new else DASH,
        "tiny_new_floor": fmt_ms(tiny_new["tpot_bound_ms"]) if tiny_new else DASH,      # this model there
        # the ratio of the two GPUs' bounds: their datasheet bandwidths' ratio, by construction
        "gpu_x": verdicts.times(on_old["tpot_bound_ms"] / on_new["tpot_bound_ms"]) if on_old and on_new else DASH,
        "ridge_here": f"{lab_verdicts.ridge_tokens(machine):.0f}" if machine else DASH,
        "ridge_gpus": verdicts.span(ridges) if ridges else DASH,
    }


def weights_facts(lab: dict | None, lang: str) -> dict[str, str]:
    """From the recorded weights experiment: each smaller format's measured memory as a share of
    fp32's (and int8's of bf16's), and what the fp32 baseline is (the shipped file, dequantized)."""
    part = (lab or {}).get("weights") or {}
    rows = {r["format"]: r for r in part.get("rows", []) if r.get("available") and r.get("weight_bytes")}

    def share(fmt: str, of: str) -> str:
        return f"{rows[fmt]['weight_bytes'] / rows[of]['weight_bytes']:.0%}" if fmt in rows and of in rows else DASH
    return {"int8_share": share("int8", "fp32"), "int8_vs_bf16": share("int8", "bf16"), "nf4_share": share("nf4", "fp32"),
            "baseline": lab_verdicts.baseline(part, lang)}


def kv_facts(lab: dict | None, model: dict, lang: str) -> dict[str, str]:
    """From the recorded KV experiment: the longest context its cache-on run reached, the cache's size
    there (the model's config through the formula), and what its step times did (the step-6 verdict)."""
    part = (lab or {}).get("kv_cache") or {}
    on = (part.get("runs") or {}).get("cache_on")
    if not on or len(on.get("step_ms") or []) < 4:
        return {"kv_context": DASH, "kv_at_context": DASH, "kv_tie": ""}
    line = lab_verdicts.kv_line(on, int(part.get("prompt_tokens") or 0))
    head_dim = model.get("head_dim") or model["hidden_size"] // model["heads"]
    return {"kv_context": str(line["b"]),
            "kv_at_context": fmt_bytes(kv_bytes(model["layers"], model["kv_heads"], head_dim, line["b"],
                                                  dtype_bytes(model.get("dtype", "float32")))),
            "kv_tie": label(f"verdict_kv_tie_{line['trend']}", lang, a=line["a"], b=line["b"])}


def lab_facts(lab: dict | None) -> dict[str, str]:
    """From the recorded lab: the k values the verification experiment timed."""
    ks = [r["k"] for r in ((lab or {}).get("verify") or {}).get("rows", [])]
    return {"k_min": str(min(ks)) if ks else DASH, "k_max": str(max(ks)) if ks else DASH}


def profile_facts(profile: dict | None, lab: dict | None, lang: str) -> dict[str, str]:
    """From the recorded profile's decode step: the bytes its matrix multiplies read, their time, the
    bandwidth that makes, and whether it beat the bandwidth the lab's summing test measured (then the
    bandwidth bound is an estimate a step can beat, not a floor)."""
    ops = (((profile or {}).get("phases") or {}).get("decode") or {}).get("ops") or []
    matmuls = [o for o in ops if o.get("family") == "matmul"]
    machine = next((h for h in ((lab or {}).get("roofline") or {}).get("hardware") or [] if h.get("measured")), None)
    ms, read = sum(o["measured_ms"] for o in matmuls), sum(o["bytes"] for o in matmuls)
    # the operations a decode step launches, one by one (each layer's, then the model's own once)
    launched = sum(o.get("layers") or 1 for o in ops if o.get("family") not in ("other", "watching", "sampling"))
    if not matmuls or ms <= 0 or machine is None:
        return {"matmul_bytes": DASH, "matmul_ms": DASH, "matmul_bw": DASH, "matmul_beat": "", "step_ops": DASH}
    bw = read / ms / 1e6                                  # bytes per ms -> GB/s
    beat = bw > machine["bandwidth_bytes_s"] / 1e9
    return {"matmul_bytes": f"{read / 1e6:.0f} MB", "matmul_ms": fmt_ms(ms), "matmul_bw": f"{bw:.3g} GB/s",
            "matmul_beat": label("fact_matmul_beat" if beat else "fact_matmul_no_beat", lang), "step_ops": str(launched)}


def page_facts(trace: dict, lab: dict | None, lang: str, profile: dict | None = None) -> dict[str, str]:
    """Every fact above, for the recording `trace` (a plain trace dict), the recorded `lab` and the
    recording's `profile`."""
    return {**model_facts(trace["model"], len(trace["prompt"]["tokens"]), lang), **speed_facts(lab),
            **profile_facts(profile, lab, lang),
            **lab_facts(lab), **weights_facts(lab, lang), **kv_facts(lab, trace["model"], lang),
            "floor_step_title": label("floor_step_title", lang)}
