"""`python -m engine bench`: the engine's cost next to plain `model.generate`, measured in one run.

Each configuration runs `repeats` times, interleaved (A B C A B C ...) so that a slow moment of the
machine hits every configuration alike; the report gives medians and the min-max spread.
"""

from __future__ import annotations

import resource
import statistics

import torch

from .clock import now_ms
from .core import Engine
from .generate import run_trace
from .lab.measure import read_bandwidth, spread
from .trace import Settings

PROMPT = "Explain in two sentences why the sky is blue."


def hf_generate_tok_s(engine: Engine, prompt: str, new_tokens: int) -> float:
    """Plain transformers: template, tokenize and greedy `generate`, forced to `new_tokens`."""
    start = now_ms(engine.device)
    inputs = engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt",
        return_dict=True).to(engine.device)
    out = engine.model.generate(**inputs, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                do_sample=False)
    elapsed = now_ms(engine.device) - start
    assert out.shape[1] - inputs["input_ids"].shape[1] == new_tokens
    return new_tokens / elapsed * 1000


def bench(engine: Engine, new_tokens: int = 64, repeats: int = 3, prompt: str = PROMPT) -> dict:
    plain = Settings(max_new_tokens=new_tokens, ignore_eos=True)
    with_attention = Settings(max_new_tokens=new_tokens, ignore_eos=True, attention=True)
    hf_generate_tok_s(engine, prompt, 8)                       # warm-up: first calls pay one-off costs
    run_trace(engine, prompt, Settings(max_new_tokens=8, attention=True))
    hf, eng, att, ttft, tpot = [], [], [], [], []
    for _ in range(repeats):
        hf.append(hf_generate_tok_s(engine, prompt, new_tokens))
        trace = run_trace(engine, prompt, plain)
        eng.append(trace.summary.tokens_per_s)
        ttft.append(trace.summary.ttft_ms)
        tpot.append(trace.summary.tpot_ms)
        attention_trace = run_trace(engine, prompt, with_attention)
        att.append(attention_trace.summary.tokens_per_s)
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the big buffer below
    bandwidth = read_bandwidth(engine.device) / 1e9
    weight_bytes = engine.info.parameter_bytes
    return {
        "model": engine.info.id, "device": engine.info.device, "dtype": engine.info.dtype,
        "threads": torch.get_num_threads(), "prompt_tokens": trace.prefill.tokens,
        "new_tokens": new_tokens, "repeats": repeats,
        "hf_generate_tok_s": statistics.median(hf),
        "engine_tok_s": statistics.median(eng),
        "engine_attention_tok_s": statistics.median(att),
        "overhead_ratio": statistics.median(eng) / statistics.median(hf),
        "attention_ratio": statistics.median(att) / statistics.median(hf),
        "ttft_ms": statistics.median(ttft), "tpot_ms": statistics.median(tpot),
        "read_bandwidth_gbs": bandwidth, "weight_bytes": weight_bytes,
        "limit_tpot_ms": weight_bytes / (bandwidth * 1e9) * 1000,
        "peak_rss_mb": peak_rss_mb,
        "trace_json_bytes": len(trace.to_json()),
        "attention_trace_json_bytes": len(attention_trace.to_json()),
        "spread": {"hf_generate_tok_s": spread(hf), "engine_tok_s": spread(eng),
                   "engine_attention_tok_s": spread(att)},
    }
