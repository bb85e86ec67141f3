"""The compiled decode step as a file: exported once (`torch.export`), compiled ahead of time by
AOTInductor into a package on disk, loaded by the server in seconds.

Why a file. The step compiled in the server's own process (`torch.compile`, the round before) took
the main thread and both cores for 2-5 minutes after every start, and a visitor's run meanwhile took
100 s instead of 4. Compiled into a file by a back-room job (engine/host/backroom.py: lowest priority,
stopped while visitors run) and kept, it costs a visitor nothing, and a restart loads it (0.5-2.6 s).

One graph, the watching one: its attention function returns each layer's newest attention row and
the step returns every layer's output (the logit lens). Measured here, the watch graph steps as fast
as a plain one (26-28 ms against 27 ms), so a run that watches nothing uses it too and drops the
extra outputs: one compile instead of two.

The step takes the static cache as tensors (every layer's keys, values and filled length) and
updates them in place, so a run's `StaticCache` stays the cache transformers knows (its length,
its bytes, `to_dynamic` for forking). Built on the CPU with freezing and max-autotune (Inductor's own
C++ micro-GEMMs against eager's MKL GEMV at batch 1: the step 1.15x faster on one draw of this
machine, an Intel Xeon, and 2.3x on another, an AMD EPYC), the weights kept as a blob next to the
code and not inside the .so (RSS +0.72-0.79 GB when loaded instead of +1.36).

A package is kept under TBT_COMPILE_CACHE/aoti, named by a key of everything it depends on:
model and a fingerprint of its weights, dtype, device (the CPU's flags, the GPU's name), torch and
transformers versions, the static cache length, Inductor's settings (TBT_COMPILE_AUTOTUNE) and this
file's, step.py's and attention.py's source. Its JSON sidecar says what the build measured: eager and compiled
step time (ROUNDS interleaved rounds, the median of each), their ratio, and whether the compiled
step's greedy tokens equal eager's.

The package is kept only where it pays (engine/compiled/verdict.py: >= 1.15x with the same
tokens); otherwise only its sidecar stays, saying why, and the host decodes eagerly.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import torch
import transformers
from transformers import StaticCache

from engine import environment
from engine.model import attention
from engine.compiled import step as step_source
from engine.compiled.step import prime, watched_step
from engine.compiled.check import CHECK_STEPS, ROUNDS, cache_tensors, compare, static_cache  # noqa: F401
from engine.compiled.verdict import PAYS, model_tag, pays, read_meta, settle, verdict  # noqa: F401 (fast.py reads them here)

INDUCTOR_CPU = {
    "freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN",
    # the weights (prepacked by freezing) in a blob beside the .so: loaded once, not twice
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
}
INDUCTOR_CUDA = {"freezing": True}


def inductor_configs(device: torch.device) -> dict:
    """The build's Inductor settings: the CPU's without max-autotune under TBT_COMPILE_AUTOTUNE=0."""
    if device.type == "cuda":
        return INDUCTOR_CUDA
    return INDUCTOR_CPU if environment.compile_autotune() else {
        k: v for k, v in INDUCTOR_CPU.items() if not k.startswith("max_autotune")}


def folder() -> Path:
    """Where packages are kept: TBT_COMPILE_CACHE (Inductor's own cache is there too)."""
    return environment.compile_cache() / "aoti"


def _machine(device: torch.device) -> str:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"cuda:{props.name}:{props.major}.{props.minor}:{torch.version.cuda}"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            lines = f.read().splitlines()
        model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")
        flags = next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("flags")), [])
        return f"cpu:{model}:{' '.join(sorted(flags))}"
    except OSError:
        import platform
        return f"cpu:{platform.machine()}:{platform.processor()}"


def key_for(model, device: torch.device, bucket: int) -> str:
    """A name for the package of `model`'s step on this machine (see the module docstring)."""
    h = hashlib.sha256()
    for part in (model.config._name_or_path, str(model.dtype), _machine(device), torch.__version__,
                 transformers.__version__, str(bucket), repr(sorted(inductor_configs(device).items()))):
        h.update(part.encode() + b"\0")
    for source in (Path(__file__), Path(attention.__file__), Path(step_source.__file__)):
        h.update(source.read_bytes())
    with torch.no_grad():
        for name, p in model.state_dict().items():         # names, shapes and a sample of each tensor
            h.update(f"{name}:{tuple(p.shape)}".encode())
            h.update(p.detach().flatten()[:256].float().cpu().numpy().tobytes())
    return f"step-{bucket}-{h.hexdigest()[:20]}"


class _Step(torch.nn.Module):
    """forward(ids [1,1], pos [1], *keys, *values, *lengths) -> step.watched_step's outputs; the cache
    tensors are updated in place."""

    def __init__(self, model, bucket: int):
        super().__init__()
        self.model, self.bucket = model, bucket
        self.layers = model.config.num_hidden_layers

    def forward(self, ids, pos, *state):
        n = self.layers
        cache = StaticCache(config=self.model.config, max_cache_len=self.bucket)
        for layer, keys, values, length in zip(cache.layers, state[:n], state[n:2 * n], state[2 * n:]):
            _fill(layer, keys, values, length)
        return watched_step(self.model, ids, pos, cache)


def _fill(layer, keys, values, length) -> None:
    layer.keys, layer.values, layer.cumulative_length = keys, values, length
    layer.device = keys.device
    layer.batch_size, layer.num_heads = keys.shape[:2]
    layer.k_head_dim, layer.v_head_dim = keys.shape[-1], values.shape[-1]
    layer.is_initialized = True


def build(fast_model, eager_model, device: torch.device, bucket: int, path: Path, progress=None) -> dict:
    """Export, compile and package the step of `fast_model` (the model's copy that runs
    attention.FAST_NAME) at `path`; check it against `eager_model` and time both. Returns the
    sidecar's contents (also written beside the package)."""
    say = progress or (lambda fraction, text: None)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        prime(fast_model, device)
        example = static_cache(fast_model.config, bucket, model=fast_model, device=device)
        ids = torch.zeros((1, 1), dtype=torch.long, device=device)
        pos = torch.tensor([2], device=device)
        say(0.02, "exporting the decode step")
        start = time.monotonic()
        exported = torch.export.export(_Step(fast_model, bucket), (ids, pos, *cache_tensors(example)), strict=False)
        export_s = time.monotonic() - start
        say(0.05, "compiling it with AOTInductor")
        start = time.monotonic()
        partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.pt2")      # renamed when checked
        torch._inductor.aoti_compile_and_package(
            exported, package_path=str(partial), inductor_configs=inductor_configs(device))
        compile_s = time.monotonic() - start
        say(0.95, "checking it against eager")
        runner = torch._inductor.aoti_load_package(str(partial))
        check = compare(runner, fast_model.config, eager_model, device, bucket)
    os.replace(partial, path)
    meta = {"package": path.name, "model": model_tag(fast_model), "bucket": bucket, "device": _machine(device)[:80],
            "torch": torch.__version__, "export_s": round(export_s, 1), "compile_s": round(compile_s, 1),
            "bytes": path.stat().st_size, **check}
    return settle(path, meta)


def ready_meta(fast_model, eager_model, device: torch.device, bucket: int, path: Path, progress=None) -> dict:
    """The sidecar of the package at `path`, built if neither is there. A verdict once given on a
    quiet machine stays: a package that paid is used; one that did not was deleted, and its sidecar
    alone says why (no build at every restart). One given on a busy machine is timed again; one
    given under another TBT_COMPILE_PAYS is given again."""
    meta = read_meta(path)
    if meta is not None and ("why" not in meta or meta.get("pays_at") != pays()):   # an older rule's verdict
        meta = settle(path, meta)
    if meta is not None and not meta.get("final", True) and path.exists():       # timed on a busy machine
        meta = settle(path, {**meta, **compare(load(path), fast_model.config, eager_model, device, bucket)})
    if meta is None or (meta.get("use") and not path.exists()):
        return build(fast_model, eager_model, device, bucket, path, progress)
    return meta


def load(path: Path):
    """The package's step, callable as the module's forward."""
    return torch._inductor.aoti_load_package(str(path))

