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
transformers versions, the static cache length and this file's and attention.py's source. Its
JSON sidecar says what the build measured: eager and compiled step time (ROUNDS interleaved rounds,
the median of each), their ratio, and whether the compiled step's greedy tokens equal eager's.

The package is kept only where it pays (engine/compiled/verdict.py: >= 1.15x with the same
tokens); otherwise only its sidecar stays, saying why, and the host decodes eagerly.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from pathlib import Path

import torch
import transformers
from transformers import DynamicCache, StaticCache

from engine import environment
from engine.model import attention
from engine.model.clock import now_ms


CHECK_STEPS = 16            # greedy steps compared against eager, and timed
ROUNDS = 5                  # rounds of that comparison; the verdict is on the medians over rounds
INDUCTOR_CPU = {
    "freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN",
    # the weights (prepacked by freezing) in a blob beside the .so: loaded once, not twice
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
}
INDUCTOR_CUDA = {"freezing": True}


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
                 transformers.__version__, str(bucket)):
        h.update(part.encode() + b"\0")
    for source in (Path(__file__), Path(attention.__file__)):
        h.update(source.read_bytes())
    with torch.no_grad():
        for name, p in model.state_dict().items():         # names, shapes and a sample of each tensor
            h.update(f"{name}:{tuple(p.shape)}".encode())
            h.update(p.detach().flatten()[:256].float().cpu().numpy().tobytes())
    return f"step-{bucket}-{h.hexdigest()[:20]}"


class _Step(torch.nn.Module):
    """forward(ids [1,1], pos [1], *keys, *values, *lengths) -> (logits [1, vocab], attention rows
    [layers, 1, heads, 1, bucket], hidden states [layers+1, 1, 1, hidden]); the cache tensors are
    updated in place."""

    def __init__(self, model, bucket: int):
        super().__init__()
        self.model, self.bucket = model, bucket
        self.layers = model.config.num_hidden_layers

    def forward(self, ids, pos, *state):
        n = self.layers
        cache = StaticCache(config=self.model.config, max_cache_len=self.bucket)
        for layer, keys, values, length in zip(cache.layers, state[:n], state[n:2 * n], state[2 * n:]):
            _fill(layer, keys, values, length)
        rows: list[torch.Tensor] = []
        out = self.model(input_ids=ids, cache=cache, cache_position=pos, position_ids=pos[None], use_cache=True,
                         logits_to_keep=1, output_hidden_states=True, **{attention.ROWS: rows})
        return out.logits[:, -1], torch.stack(rows), torch.stack(out.hidden_states)


def _fill(layer, keys, values, length) -> None:
    layer.keys, layer.values, layer.cumulative_length = keys, values, length
    layer.device = keys.device
    layer.batch_size, layer.num_heads = keys.shape[:2]
    layer.k_head_dim, layer.v_head_dim = keys.shape[-1], values.shape[-1]
    layer.is_initialized = True


def cache_tensors(cache: StaticCache) -> list[torch.Tensor]:
    """What the step takes after ids and pos: every layer's keys, then values, then filled length."""
    layers = cache.layers
    return [l.keys for l in layers] + [l.values for l in layers] + [l.cumulative_length for l in layers]


def static_cache(config, bucket: int, cache: DynamicCache | None = None, model=None, device=None) -> StaticCache:
    """A static cache of `bucket` tokens holding what `cache` holds, or (no cache) what `model`'s
    pass over two zero tokens puts there: an export's example."""
    static = StaticCache(config=config, max_cache_len=bucket)
    if cache is not None:
        for i, layer in enumerate(cache.layers):
            static.update(layer.keys, layer.values, i)
    else:
        with torch.no_grad():
            model(input_ids=torch.zeros((1, 2), dtype=torch.long, device=device), cache=static,
                  cache_position=torch.arange(2, device=device), use_cache=True, logits_to_keep=1)
    for layer in static.layers:               # static-address marks are for CUDA graphs, not export
        for t in (layer.keys, layer.values, layer.cumulative_length):
            if hasattr(t, "_dynamo_static_input_type"):
                del t._dynamo_static_input_type
    return static


def prime(model, device) -> None:
    """transformers' output recording sets itself up under a lock on its first call with
    output_hidden_states, which a trace cannot enter: do it once eagerly."""
    with torch.no_grad():
        model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=device), output_hidden_states=True,
              **{attention.ROWS: []})


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
            exported, package_path=str(partial),
            inductor_configs=INDUCTOR_CUDA if device.type == "cuda" else INDUCTOR_CPU)
        compile_s = time.monotonic() - start
        say(0.95, "checking it against eager")
        runner = torch._inductor.aoti_load_package(str(partial))
        check = compare(runner, fast_model.config, eager_model, device, bucket)
    os.replace(partial, path)
    meta = {"package": path.name, "model": model_tag(fast_model), "bucket": bucket, "device": _machine(device)[:80],
            "torch": torch.__version__, "export_s": round(export_s, 1), "compile_s": round(compile_s, 1),
            "bytes": path.stat().st_size, **check}
    return settle(path, meta)


def compare(runner, config, eager_model, device, bucket: int, rounds: int = ROUNDS) -> dict:
    """`rounds` of `compare_once`: the same tokens every round? The medians over rounds of each
    round's median step times, and their ratio (eager over compiled). Rounds give a busy moment of
    a shared machine one vote, not the verdict; the load average at the end is recorded."""
    checks = [compare_once(runner, config, eager_model, device, bucket) for _ in range(max(1, rounds))]
    eager = statistics.median(c["eager_ms"] for c in checks)
    compiled = statistics.median(c["compiled_ms"] for c in checks)
    return {"same_tokens": all(c["same_tokens"] for c in checks), "check_steps": CHECK_STEPS, "rounds": len(checks),
            "eager_ms": round(eager, 2), "compiled_ms": round(compiled, 2),
            "ratio": round(eager / compiled, 3) if compiled > 0 else 0.0,
            "round_ratios": [round(c["eager_ms"] / c["compiled_ms"], 3) if c["compiled_ms"] else 0.0 for c in checks],
            "load_average": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads()}


def compare_once(runner, config, eager_model, device, bucket: int) -> dict:
    """CHECK_STEPS greedy steps from one prompt (a few fixed token ids: only equality matters),
    eager (DynamicCache) and compiled, in turns so a busy moment of the machine hits both alike:
    same tokens? And the median step time of each (on the job's clock: a back-room build's pauses
    are left out)."""
    prompt = torch.tensor([[1, 504, 3575, 282, 4649, 314]], device=device)[:, : max(2, min(6, bucket // 2))]
    prompt = prompt.clamp(max=config.vocab_size - 1)
    with torch.no_grad():
        dynamic = DynamicCache(config=config)
        out = eager_model(input_ids=prompt, cache=dynamic, use_cache=True, logits_to_keep=1)
        static = static_cache(config, bucket, dynamic)
        first = int(out.logits[0, -1].argmax())
        eager_tokens, eager_ms, tokens, compiled_ms = [first], [], [first], []
        position = prompt.shape[1]
        for i in range(CHECK_STEPS):
            start = now_ms(device)
            out = eager_model(input_ids=torch.tensor([[eager_tokens[-1]]], device=device), cache=dynamic,
                              use_cache=True, logits_to_keep=1)
            eager_tokens.append(int(out.logits[0, -1].argmax()))
            eager_ms.append(now_ms(device) - start)
            start = now_ms(device)
            logits = runner(torch.tensor([[tokens[-1]]], device=device), torch.tensor([position], device=device),
                            *cache_tensors(static))[0]
            tokens.append(int(logits[0].argmax()))
            compiled_ms.append(now_ms(device) - start)
            position += 1
    # the first steps warm caches and allocators: the medians are over the second half
    return {"same_tokens": tokens == eager_tokens, "check_steps": CHECK_STEPS,
            "eager_ms": round(statistics.median(eager_ms[CHECK_STEPS // 2:]), 2),
            "compiled_ms": round(statistics.median(compiled_ms[CHECK_STEPS // 2:]), 2)}


def ready_meta(fast_model, eager_model, device: torch.device, bucket: int, path: Path, progress=None) -> dict:
    """The sidecar of the package at `path`, built if neither is there. A verdict once given stays:
    a package that paid is used; one
    that did not was deleted, and its sidecar alone says why (no build at every restart)."""
    meta = read_meta(path)
    if meta is None or (meta.get("use") and not path.exists()):
        return build(fast_model, eager_model, device, bucket, path, progress)
    return meta if "why" in meta else settle(path, meta)      # "why": a sidecar from before the verdict rule


def load(path: Path):
    """The package's step, callable as the module's forward."""
    return torch._inductor.aoti_load_package(str(path))

