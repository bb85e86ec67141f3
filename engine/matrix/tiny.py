"""Tiny models of the architectures Spaces run, built from their transformers configs.

Random weights (a fixed seed), hidden 64, 3 layers, the embedded SmolLM2 tokenizer (its vocabulary,
so the page's token views read real text) and a chat template of one of the three thinking shapes
(engine/matrix/templates.py). Nothing is downloaded. `initializer_range` is large enough that the
greedy token is never a near-tie, so two correct ways of running the model pick the same tokens.

The test tier (tests/tiny) and `python -m engine models --matrix` both build them here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from engine.errors import ModelLoadError
from engine.matrix.templates import TEMPLATES

SEED = 0
HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN = 64, 3, 4, 2, 16, 128
WINDOW = 8                 # sliding-window layers see 8 keys: a short prompt already passes it
INIT = 0.3                 # initializer_range: logits far apart (0.02 gives near-ties)
POSITIONS = 1024           # past the compiled step's one bucket (512): a run longer than it fits the context
SLIDING, FULL = "sliding_attention", "full_attention"


def _common(tokenizer) -> dict:
    return dict(hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, vocab_size=len(tokenizer),
                max_position_embeddings=POSITIONS, initializer_range=INIT, tie_word_embeddings=True,
                **_special(tokenizer))


def _special(tokenizer) -> dict:
    return dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id)


def _gpt2(tok):
    return transformers.GPT2Config(n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_inner=FFN, n_positions=POSITIONS,
                                   vocab_size=len(tok), initializer_range=INIT, **_special(tok))


def _neox(tok):
    return transformers.GPTNeoXConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                      intermediate_size=FFN, rotary_pct=0.25, max_position_embeddings=POSITIONS,
                                      vocab_size=len(tok), initializer_range=INIT, tie_word_embeddings=False,
                                      **_special(tok))


# name -> config from the tokenizer; the names are transformers' model types
CONFIGS = {
    "llama": lambda tok: transformers.LlamaConfig(**_common(tok)),
    "qwen2": lambda tok: transformers.Qwen2Config(**_common(tok)),
    "qwen3": lambda tok: transformers.Qwen3Config(**_common(tok)),
    "qwen3_moe": lambda tok: transformers.Qwen3MoeConfig(
        **_common(tok), num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, decoder_sparse_step=1,
        mlp_only_layers=[]),
    "mistral": lambda tok: transformers.MistralConfig(**_common(tok), sliding_window=WINDOW),
    "gemma2": lambda tok: transformers.Gemma2Config(
        **_common(tok), sliding_window=WINDOW, layer_types=[SLIDING, FULL, SLIDING], query_pre_attn_scalar=HEAD_DIM),
    "gemma3_text": lambda tok: transformers.Gemma3TextConfig(
        **_common(tok), sliding_window=WINDOW, layer_types=[SLIDING, SLIDING, FULL], query_pre_attn_scalar=HEAD_DIM),
    "phi3": lambda tok: transformers.Phi3Config(**_common(tok)),
    "gpt2": _gpt2,
    "gpt_neox": _neox,
    "olmo2": lambda tok: transformers.Olmo2Config(**_common(tok)),
    "smollm3": lambda tok: transformers.SmolLM3Config(**_common(tok), no_rope_layers=[1, 1, 0]),
    "granite": lambda tok: transformers.GraniteConfig(
        **_common(tok), embedding_multiplier=4.0, logits_scaling=2.0, residual_multiplier=0.5,
        attention_multiplier=HEAD_DIM ** -0.5),
}
ARCHS = tuple(CONFIGS)
# which layers attend to a window, per architecture (the KV formula and the tests read the config)
SLIDING_ARCHS = ("mistral", "gemma2", "gemma3_text")


def base_tokenizer():
    """The embedded SmolLM2 tokenizer (converted once from its GGUF file, then read from the cache)."""
    from engine.model.loading import converted_embedded
    return AutoTokenizer.from_pretrained(converted_embedded())


def config_of(arch: str, tokenizer=None):
    if arch not in CONFIGS:
        raise ModelLoadError(f"no tiny model {arch!r}; choose one of {', '.join(ARCHS)}")
    return CONFIGS[arch](tokenizer or base_tokenizer())


def build(arch: str, template: str = "scaffold", root: str | Path | None = None) -> Path:
    """A folder with the tiny model of `arch` and a chat template of the `template` shape, built
    once under `root` (a temporary folder if None) and reused there."""
    if template not in TEMPLATES:
        raise ModelLoadError(f"no template {template!r}; choose one of {', '.join(TEMPLATES)}")
    root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="tbt-tiny-"))
    target = root / f"{arch}-{template}"
    if (target / "config.json").is_file():
        return target
    tokenizer = base_tokenizer()
    config = config_of(arch, tokenizer)
    if TEMPLATES[template] is not None:
        tokenizer.chat_template = TEMPLATES[template]
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{arch}-"))
    try:
        model.save_pretrained(tmp)
        GenerationConfig(**_special(tokenizer)).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "SOURCE").write_text(json.dumps({"tiny": arch, "template": template, "seed": SEED,
                                                "config": type(config).__name__,
                                                "transformers": transformers.__version__}) + "\n")
        os.replace(tmp, target)
    except OSError:
        if not (target / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
