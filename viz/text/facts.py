"""The numbers the chapters' teaching text quotes, taken from what the page measured or reads.

The walkthrough's narration and each chapter's introduction are fixed text (gr.I18n), but the
numbers in them are not written into the catalogue: they are `{placeholders}` filled here from the
recording the page opens on (its prompt and the model's config), the recorded lab (the roofline's
measured bandwidth and its projections) and the public configs the KV projection uses
(engine/schema/specs.py). `fill` leaves any other `{placeholder}` for its caller.
"""

from __future__ import annotations

import re

from engine.schema.specs import CONTEXTS, PUBLIC_MODELS, kv_bytes

from viz.fmt import DASH, fmt_bytes, fmt_ms
from viz.frames import MIN_WEIGHT, context_name

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
    }


def speed_facts(lab: dict | None) -> dict[str, str]:
    """From the recorded roofline: the decode floor of this model on this machine (its measured
    bandwidth) and of a larger public model on the fastest GPU it projects."""
    roof = (lab or {}).get("roofline") or {}
    rows, hardware = roof.get("rows") or [], roof.get("hardware") or []
    here = next((r for r in rows if r.get("this_model") and r.get("hardware_measured")), None)
    machine = next((h for h in hardware if h.get("measured")), None)
    gpu = next((h for h in reversed(hardware) if not h.get("measured")), None)
    other = next((r for r in rows if not r.get("this_model") and gpu and r.get("hardware") == gpu["name"]), None)
    return {
        "weights": fmt_bytes(here["weight_bytes"]) if here else DASH,
        "bandwidth": f"{machine['bandwidth_bytes_s'] / 1e9:.3g} GB/s" if machine else DASH,
        "floor": fmt_ms(here["tpot_bound_ms"]) if here else DASH,
        "speed_model": other["model"] if other else DASH,
        "gpu": gpu["name"] if gpu else DASH,
        "gpu_floor": fmt_ms(other["tpot_bound_ms"]) if other else DASH,
    }


def lab_facts(lab: dict | None) -> dict[str, str]:
    """From the recorded lab: the k values the verification experiment timed."""
    ks = [r["k"] for r in ((lab or {}).get("verify") or {}).get("rows", [])]
    return {"k_min": str(min(ks)) if ks else DASH, "k_max": str(max(ks)) if ks else DASH}
