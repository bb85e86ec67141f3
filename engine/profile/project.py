"""The profile's per-op table projected where it was not measured: onto the GPUs the lab's roofline
lists (datasheet bandwidth and FLOP/s, 16-bit values) and onto the public models it lists (their
configs scale every op's FLOPs and bytes). Every row is a projection: the roofline's time, which a
real kernel only approaches (the measured/predicted ratios here say how far this machine is)."""

from __future__ import annotations

from engine.lab.roofline import DATASHEET
from engine.profile.ops import LAYER_OPS, Dims, predicted
from engine.schema.specs import PUBLIC_MODELS, short_name

# intermediate (MLP) size and vocabulary of the public models in engine/schema/specs.py, from each
# model's config.json on its hub page (intermediate_size, vocab_size)
PUBLIC_MLP_VOCAB = {"Llama-3.1-8B": (14336, 128256), "Qwen3-32B": (25600, 151936), "Llama-3.1-70B": (28672, 128256)}
FAMILIES = {"matmul": ("q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj", "gate_proj", "up_proj", "gate_up_proj",
                       "down_proj", "router", "experts", "lm_head"),
            "attention": ("attention",), "other": ("input_norm", "post_norm", "qk_norm", "ffn_norm", "post_ffn_norm",
                                                   "extra_norm", "final_norm", "act_mul", "act", "residual",
                                                   "embed", "rope_tables", "sampling")}


def public_dims() -> dict[str, Dims]:
    out = {}
    for s in PUBLIC_MODELS:
        mlp, vocab = PUBLIC_MLP_VOCAB[s.name]
        out[s.name] = Dims(layers=s.layers, hidden=s.hidden_size, heads=s.heads, kv_heads=s.kv_heads,
                           head_dim=s.head_dim, intermediate=mlp, vocab=vocab)
    return out


def projection(own: Dims, own_name: str, prompt_tokens: int, decode_keys: int,
               own_plan: tuple[list, bool] | None = None) -> list[dict]:
    """Rows (model, hardware, phase, family): the roofline time of the prefill over `prompt_tokens`
    and of one decode step with `decode_keys` keys, by family of ops, at 2 bytes a value; this page's
    model counted as its own layers are built (`own_plan`: run.own_plan), the public ones Llama-style."""
    models = {short_name(own_name): own, **public_dims()}
    rows = []
    for name, dims in models.items():
        plan, rope = own_plan if own_plan and dims is own else (None, True)
        for hw in DATASHEET:
            for phase, tokens, keys in (("prefill", prompt_tokens, prompt_tokens), ("decode", 1, decode_keys)):
                ops = predicted(dims, tokens, keys, 2, hw["peak_flops"], hw["bandwidth_bytes_s"], plan, rope)
                for family, members in FAMILIES.items():
                    mine = [r for r in ops if r["op"] in members]
                    rows.append({"model": name, "this_model": name == short_name(own_name), "hardware": hw["name"],
                                 "phase": phase, "family": family, "projection": True,
                                 "predicted_ms": sum(r["predicted_ms"] for r in mine),
                                 "flops": sum(r["flops"] for r in mine), "bytes": sum(r["bytes"] for r in mine),
                                 "memory_bound_share": _memory_share(mine)})
    return rows


def _memory_share(rows: list[dict]) -> float:
    """The share of these ops' predicted time that memory (not arithmetic) sets."""
    total = sum(r["predicted_ms"] for r in rows)
    return sum(r["predicted_ms"] for r in rows if r["bound"] == "memory") / total if total else 0.0


assert set(LAYER_OPS) <= {op for members in FAMILIES.values() for op in members}
