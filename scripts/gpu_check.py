"""GPU smoke test and timings, for a lent GPU machine: the SmolLM2-135M architecture with random
weights (the model file is too big to carry there; speed does not depend on the weights' values).

    TBT_GPU_MODEL_DIR=folder-with-config.json-and-tokenizer-files python3 scripts/gpu_check.py

The folder: config.json, generation_config.json and the tokenizer files of the converted embedded
model (~/.cache/token-by-token/SmolLM2-*/, without model.safetensors). Writes $OUT/gpu.json.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import torch  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from engine.model.core import Engine  # noqa: E402
from engine.model.loading import LoadedModel, describe  # noqa: E402
from engine.model.lens import exported  # noqa: E402
from engine.run.generate import run_trace  # noqa: E402
from engine.schema.trace import Settings  # noqa: E402
from engine.lab import run_lab  # noqa: E402
from engine.bench.speed import hf_generate_tok_s, wall_tok_s  # noqa: E402
from engine.run.fork import run_fork  # noqa: E402
from engine.schema.validate import validate
out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
folder = os.environ.get("TBT_GPU_MODEL_DIR", ".gpu/smol")
tok = AutoTokenizer.from_pretrained(folder)
prompt = "Explain in two sentences why the sky is blue."
med = statistics.median


def engine_of(dtype):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=dtype,
                                             attn_implementation="sdpa").to("cuda").eval()
    info = describe(model, "random-init:SmolLM2-135M", "local", None)
    return Engine(LoadedModel(model=model, tokenizer=tok, info=info))


def log(key, value):
    out[key] = value
    print(key, json.dumps(value)[:400], flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "gpu.json"), "w") as f:
        json.dump(out, f, indent=1)


def speed(e, name):
    run_trace(e, prompt, Settings(max_new_tokens=8, ignore_eos=True))     # warm-up
    hf_generate_tok_s(e, prompt, 8)
    hf, plain, watched = [], [], []
    for _ in range(3):                                                     # interleaved rounds
        hf.append(hf_generate_tok_s(e, prompt, 64))
        t = run_trace(e, prompt, Settings(max_new_tokens=64, ignore_eos=True))
        plain.append((t.summary.ttft_ms, t.summary.tpot_ms, wall_tok_s(t)))
        a = run_trace(e, prompt, Settings(max_new_tokens=64, ignore_eos=True, attention=True))
        watched.append((wall_tok_s(a), a.summary.observe_ms / 64))
    log(f"speed_{name}", {"hf_generate_tok_s": med(hf), "engine_wall_tok_s": med(p[2] for p in plain),
                          "ttft_ms": med(p[0] for p in plain), "tpot_ms": med(p[1] for p in plain),
                          "attention_wall_tok_s": med(a[0] for a in watched),
                          "observe_ms_per_step": med(a[1] for a in watched)})


def smoke(e):
    t = validate(exported(e, run_trace(e, prompt, Settings(max_new_tokens=16, attention=True, logit_lens=True))))
    log("smoke_trace", {"steps": len(t.steps), "attention_steps": len(t.attention.steps), "lens": len(t.steps[0].lens)})
    run = run_trace(e, prompt, Settings(max_new_tokens=12))
    branch = validate(run_fork(e, run, 3, run.steps[3].candidates[1].id)).branches[-1]
    log("smoke_fork", {"branch_steps": len(branch.steps), "ttft_ms": branch.summary.ttft_ms, "copy_ms": branch.copy_ms})


def fast(e):
    """The compiled decode path (an AOTInductor package): its state, its tokens against eager, its speed."""
    import time
    start = time.perf_counter()
    f = e.start_fast(wait=True)
    log("fast_compile", {"s": round(time.perf_counter() - start, 1), "graphs": f.describe() if f else None})
    if f is None or f.state("plain", 512) != "ready":
        return
    settings = Settings(max_new_tokens=64, ignore_eos=True)
    compiled = run_trace(e, prompt, settings)
    kept, e.fast = e.fast, None
    reference = run_trace(e, prompt, settings)
    e.fast = kept
    rounds = []
    for _ in range(3):
        hf = hf_generate_tok_s(e, prompt, 64)
        t = run_trace(e, prompt, settings)
        w = run_trace(e, prompt, Settings(max_new_tokens=64, ignore_eos=True, attention=True))
        rounds.append((hf, wall_tok_s(t), t.summary.tpot_ms, wall_tok_s(w), w.observation.decode))
    log("fast", {"path": compiled.observation.decode, "same_tokens_as_eager": [s.id for s in compiled.steps] == [
        s.id for s in reference.steps], "rounds (hf, fast wall tok/s, fast tpot ms, watched tok/s, path)": rounds})


def lab(e):
    result = run_lab(e, only=["batching", "verify", "speculative"])
    log("lab_bf16", {
        "batching": [(r["batch"], round(r["step_ms"]["median"], 3), round(r["tokens_per_s"], 1), round(r["speedup"], 2))
                     for r in result["batching"]["rows"]],
        "machine": result["batching"]["machine"],
        "verify": [(r["k"], round(r["ms"]["median"], 3), round(r["vs_one"], 2)) for r in result["verify"]["rows"]],
        "speculative": [(r["arm"], round(r["tokens_per_s"], 1), round(r["speedup"], 2), r["identical"], r["passes"])
                        for r in result["speculative"]["rows"]],
        "seconds": result["seconds"]})


for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
    engine = engine_of(dtype)
    speed(engine, name)
    if name == "fp32":
        smoke(engine)
        fast(engine)
    else:
        lab(engine)
    del engine
    torch.cuda.empty_cache()
print("done", flush=True)
