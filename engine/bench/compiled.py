"""The compiled decode path measured (`python -m engine bench`, unless --no-fast): speed next to plain
`model.generate` and llama.cpp in the same run, the cost of watching inside the graph, and the greedy
tokens checked against `generate` over several prompts.

`fast_ratio`: the compiled path's wall-clock tokens/s (prefill, decode and sampling, as a page run
pays them) over `generate`'s, paired per round. `fast_capture_ratio`: the same with attention capture
on (the watched graph) over off. `fast_identical`: every prompt's greedy tokens equal `generate`'s.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from engine.bench.speed import chat_inputs, hf_generate_tok_s, paired, wall_tok_s
from engine.model.core import Engine
from engine.run.generate import run_trace
from engine.lab.measure import spread
from engine.schema.trace import Settings

# five prompts of the kinds the page is used with: an explanation, Chinese, a greeting, a poem, a story
PROMPTS = ("Explain in two sentences why the sky is blue.", "什么是量子计算？", "Hello, world!",
           "Write a haiku about the sea.", "Continue the story: she walked into the shop and")


def greedy_ids(engine: Engine, prompt: str, new_tokens: int) -> list[int]:
    """`model.generate`'s greedy tokens for the chat-templated prompt (its EOS included)."""
    inputs = chat_inputs(engine, prompt)
    out = engine.model.generate(**inputs, max_new_tokens=new_tokens, do_sample=False)
    return out[0, inputs["input_ids"].shape[1]:].tolist()


def identical(engine: Engine, new_tokens: int, prompts=PROMPTS) -> dict:
    """Each prompt's compiled greedy run against `generate`: equal, or where they part."""
    result = {}
    for prompt in prompts:
        trace = run_trace(engine, prompt, Settings(max_new_tokens=new_tokens))
        ours, theirs = [s.id for s in trace.steps], greedy_ids(engine, prompt, new_tokens)
        apart = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
        result[prompt] = {"equal": ours == theirs, "tokens": len(ours), "path": trace.observation.decode,
                          "first_difference": apart}
    return result


def fast_figures(engine: Engine, prompt: str, new_tokens: int = 64, repeats: int = 3,
                 llamacpp_tok_s: float | None = None) -> dict:
    """The compiled path's figures; `llamacpp_tok_s` (llama.cpp's decode, measured in the same run)
    adds `fast_vs_llamacpp`."""
    start = time.perf_counter()
    fast = engine.start_fast(wait=True)
    if fast is None:
        return {"fast_skipped": str(engine.fast_refusal), "fast_refusal": engine.fast_refusal.key}
    bucket = fast.bucket(len(engine.encode(engine.apply_template(prompt, Settings()), True)) + new_tokens,
                         engine.info.context_length)
    compile_s = time.perf_counter() - start
    states = {v: fast.state(v, bucket) for v in ("plain", "watch")}
    if any(s != "ready" for s in states.values()):
        return {"fast_skipped": f"no compiled step for {bucket} tokens: {fast.describe() or states}"}
    plain = Settings(max_new_tokens=new_tokens, ignore_eos=True)
    watched = dataclasses.replace(plain, attention=True)
    hf_generate_tok_s(engine, prompt, 8)
    run_trace(engine, prompt, dataclasses.replace(plain, max_new_tokens=8))     # warm-up
    hf, off, on, tpot = [], [], [], []
    for _ in range(repeats):
        hf.append(hf_generate_tok_s(engine, prompt, new_tokens))
        trace = run_trace(engine, prompt, plain)
        assert trace.observation.decode == "compiled", trace.observation
        off.append(wall_tok_s(trace))
        tpot.append(trace.summary.tpot_ms)
        on.append(wall_tok_s(run_trace(engine, prompt, watched)))
    same = identical(engine, new_tokens)
    decode_tok_s = 1000 / statistics.median(tpot)
    return {
        "fast_tok_s": statistics.median(off), "fast_ratio": paired(off, hf),
        "fast_hf_generate_tok_s": statistics.median(hf),
        "fast_capture_tok_s": statistics.median(on), "fast_capture_ratio": paired(on, off),
        "fast_tpot_ms": statistics.median(tpot), "fast_decode_tok_s": decode_tok_s,
        "fast_vs_llamacpp": decode_tok_s / llamacpp_tok_s if llamacpp_tok_s else None,
        "fast_identical": all(r["equal"] for r in same.values()), "fast_identical_prompts": same,
        "fast_static_cache_tokens": bucket, "fast_compile_s": compile_s, "fast_graphs": fast.describe(),
        "fast_spread": {"fast_tok_s": spread(off), "fast_capture_tok_s": spread(on), "hf": spread(hf)},
    }
