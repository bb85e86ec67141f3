"""`make gpu-check`: the decode step's graph path (engine/compiled/graph.py) measured in one command, for a
lent GPU machine (under 8 minutes on an H100), printing JSON. It runs on the CPU too: the graph path is
then Inductor's C++ (or TBT_GRAPH_BACKEND's backend), reported as "cpu".

The model: the embedded model's architecture with random weights (the weights file does not travel to
the GPU machine; a step's speed does not depend on the weights' values, and the token checks compare
two paths over the same weights). TBT_GPU_MODEL_DIR: a folder with config.json, generation_config.json
and the tokenizer files of the converted embedded model (~/.cache/token-by-token/SmolLM2-*/ without
model.safetensors); by default .gpu/smol. Writes $OUT/gpu.json (or ./gpu.json) after every figure.

Figures, each key in the JSON:
- graph_<dtype>: each bucket's build (compile_s, the teacher-forced check: top1_agree, max_logit_diff)
- tokens_fp32: 64 free-running greedy tokens, graph path == eager path
- tpot_<dtype>: eager vs graph TPOT (ms), plain and watched (attention rows + lens), medians of 3
  interleaved rounds, and their ratios
- kv_<dtype>: TPOT with the KV cache off (every step re-reads the whole sequence) over on, 512 tokens
  of context
- fork_<dtype>: a branch's first token from the kept cache vs recomputed, on a 256-token prefix
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("TBT_FAST_KIND", "graph")
import torch  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from engine.bench.fork import fork_bench  # noqa: E402
from engine.compiled.fast import GRAPH_BUCKETS, FastPath  # noqa: E402
from engine.model.core import Engine  # noqa: E402
from engine.model.loading import LoadedModel, describe  # noqa: E402
from engine.run.generate import run_trace  # noqa: E402
from engine.schema.trace import Settings  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
BUCKETS = GRAPH_BUCKETS if CUDA else GRAPH_BUCKETS[:2]      # a CPU's Inductor takes minutes a bucket
FOLDER = os.environ.get("TBT_GPU_MODEL_DIR", ".gpu/smol")
PROMPT = "Explain in two sentences why the sky is blue."
out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if CUDA else "cpu",
       "backend": os.environ.get("TBT_GRAPH_BACKEND", "inductor")}
med = statistics.median


def log(key, value):
    out[key] = value
    print(key, json.dumps(value)[:600], flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "gpu.json"), "w") as f:
        json.dump(out, f, indent=1)


def engine_of(dtype) -> Engine:
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(FOLDER), dtype=dtype,
                                             attn_implementation="sdpa").to(DEVICE).eval()
    info = describe(model, "random-init:SmolLM2-135M", "local", None)
    return Engine(LoadedModel(model=model, tokenizer=AutoTokenizer.from_pretrained(FOLDER), info=info))


def eager(e: Engine, *args, **kwargs):
    kept, e.fast = e.fast, None
    try:
        return run_trace(e, *args, **kwargs)
    finally:
        e.fast = kept


def build(e: Engine, name: str) -> None:
    e.fast = FastPath(e.model, e.device, e.info.id)
    for bucket in BUCKETS:
        e.fast.compile_now("watch", bucket)
    log(f"graph_{name}", e.fast.describe())


def tokens(e: Engine) -> None:
    settings = Settings(max_new_tokens=64, ignore_eos=True)
    graph, reference = run_trace(e, PROMPT, settings), eager(e, PROMPT, settings)
    same = [s.id for s in graph.steps] == [s.id for s in reference.steps]
    log("tokens_fp32", {"path": graph.observation.decode, "equal": same,
                        "first_difference": None if same else next(
                            i for i, (a, b) in enumerate(zip(graph.steps, reference.steps)) if a.id != b.id)})


def tpot(e: Engine, name: str) -> None:
    plain = Settings(max_new_tokens=64, ignore_eos=True)
    watched = Settings(max_new_tokens=64, ignore_eos=True, attention=True, logit_lens=True)
    run_trace(e, PROMPT, watched), eager(e, PROMPT, watched)                 # warm-up
    rounds = {k: [] for k in ("eager_plain", "graph_plain", "eager_watched", "graph_watched")}
    paths = set()
    for _ in range(3):                                                       # interleaved rounds
        for key, runner, settings in (("eager_plain", eager, plain), ("graph_plain", run_trace, plain),
                                      ("eager_watched", eager, watched), ("graph_watched", run_trace, watched)):
            t = runner(e, PROMPT, settings)
            rounds[key].append(t.summary.tpot_ms)
            if key.startswith("graph"):
                paths.add(t.observation.decode)
    got = {k: round(med(v), 3) for k, v in rounds.items()}
    log(f"tpot_{name}", {**got, "graph_path": sorted(paths),
                         "plain_ratio": round(got["eager_plain"] / got["graph_plain"], 2),
                         "watched_ratio": round(got["eager_watched"] / got["graph_watched"], 2)})


def kv(e: Engine, name: str, context: int = 512) -> None:
    words = ("The history of the bicycle is a story of small changes. " * 80).split(" ")
    while len(e.encode(e.apply_template(" ".join(words), Settings()), templated=True)) > context:
        words.pop()
    prompt, on, off = " ".join(words), [], []
    for _ in range(3):
        a = run_trace(e, prompt, Settings(max_new_tokens=16, ignore_eos=True))
        b = run_trace(e, prompt, Settings(max_new_tokens=16, ignore_eos=True, use_cache=False))
        on.append(a.summary.tpot_ms)
        off.append(b.summary.tpot_ms)
    log(f"kv_{name}", {"context_tokens": a.prefill.tokens, "on_path": a.observation.decode, "tpot_on_ms": round(med(on), 3),
                       "tpot_off_ms": round(med(off), 3), "off_over_on": round(med(off) / med(on), 2)})


def fork(e: Engine, name: str) -> None:
    result = fork_bench(e, prompt_tokens=256, new_tokens=16, repeats=3)
    log(f"fork_{name}", {"prompt_tokens": result["prompt_tokens"], "worst_reuse_over_recompute": round(result["worst_ratio"], 3),
                         "forks": [(r["at"], r["ttft_reuse_ms"], r["ttft_recompute_ms"]) for r in result["forks"]]})


start = time.monotonic()
for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
    engine = engine_of(dtype)
    build(engine, name)
    if name == "fp32":
        tokens(engine)
    tpot(engine, name)
    kv(engine, name)
    fork(engine, name)
    del engine
    if CUDA:
        torch.cuda.empty_cache()
log("seconds", round(time.monotonic() - start, 1))
print("done", flush=True)
