"""`python -m engine bench`: the engine's cost next to plain `model.generate`, measured in one run.

Ratios compare wall-clock tokens/s with `generate`'s, so the cost of watching (attention capture,
logit lens) shows in them: `app_default_ratio` is the Explore tab's default settings, and
`observe_ms_per_step` is the watching cost that the trace itself reports. `compare_tpot_ratio`
is the reasoning mode's TPOT as reported inside the side-by-side flow over the same mode run alone.
`llamacpp_decode_tok_s` is llama.cpp on the same GGUF file, when llama-cpp-python is installed.

Each configuration runs `repeats` times, interleaved (A B C A B C ...) so that a slow moment of the
machine hits every configuration alike; the report gives medians and the min-max spread.
"""

from __future__ import annotations

import dataclasses
import resource
import statistics
from collections import defaultdict

import torch

from engine.bench import reference as llamacpp
from engine.model.clock import now_ms
from engine.model.core import Engine
from engine.run.generate import run_trace
from engine.lab.measure import read_bandwidth, spread
from engine.model.lens import exported
from engine.model.loading import embedded_gguf
from engine.run.request import APP_DEFAULTS
from engine.run.side_by_side import interleave, settings_pair
from engine.schema.trace import Settings

PROMPT = "Explain in two sentences why the sky is blue."


def chat_inputs(engine: Engine, prompt: str):
    """The prompt as plain transformers takes it: chat template, tokenized, on the model's device."""
    return engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt",
        return_dict=True).to(engine.device)


def hf_generate_tok_s(engine: Engine, prompt: str, new_tokens: int) -> float:
    """Plain transformers: template, tokenize and greedy `generate`, forced to `new_tokens`."""
    start = now_ms(engine.device)
    inputs = chat_inputs(engine, prompt)
    out = engine.model.generate(**inputs, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                do_sample=False)
    elapsed = now_ms(engine.device) - start
    assert out.shape[1] - inputs["input_ids"].shape[1] == new_tokens
    return new_tokens / elapsed * 1000


def paired(numerators: list[float], denominators: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(numerators, denominators))


def wall_tok_s(trace) -> float:
    """Tokens per second on the wall clock: what the run cost with its watching included."""
    return trace.summary.new_tokens / trace.summary.wall_ms * 1000


def llamacpp_reference(engine: Engine, prompt: str, new_tokens: int, repeats: int) -> dict:
    """llama.cpp's decode speed on the embedded GGUF, or why it was not measured."""
    if engine.info.source != "embedded-gguf":
        return {"skipped": "the model is not the embedded GGUF, which llama.cpp would run"}
    if not llamacpp.available():
        return {"skipped": "llama-cpp-python is not installed (make test installs it)"}
    text = engine.apply_template(prompt, Settings())
    return llamacpp.decode_speed(str(embedded_gguf()), text, new_tokens, repeats, torch.get_num_threads())


def lens_costs(engine: Engine, trace, repeats: int = 5) -> dict:
    """What the lens costs where it is now computed: showing one step (median of `repeats`, each on a
    fresh step) and exporting the whole run (every step's lens, batched)."""
    from engine.model.lens import step_lens
    view = []
    for i in range(repeats):
        step = trace.steps[(i * 7) % len(trace.steps)]
        start = now_ms(engine.device)
        step_lens(engine, step)
        view.append(now_ms(engine.device) - start)
    start = now_ms(engine.device)
    exported(engine, trace)
    return {"lens_view_ms": statistics.median(view), "lens_export_ms": now_ms(engine.device) - start,
            "lens_export_steps": len(trace.steps), "lens_hidden_bytes_per_step": len(trace.steps[0].hidden.data)}


def bench(engine: Engine, new_tokens: int = 64, repeats: int = 3, prompt: str = PROMPT) -> dict:
    def settings(**kw) -> Settings:
        return Settings(max_new_tokens=new_tokens, ignore_eos=True, **kw)

    configs = {
        "plain": settings(),
        "attention": settings(attention=True),
        "lens": settings(logit_lens=True),
        "attention_lens": settings(attention=True, logit_lens=True),
        "app_default": dataclasses.replace(APP_DEFAULTS, max_new_tokens=new_tokens, ignore_eos=True),
    }
    budget = answer = new_tokens // 2
    _, reasoning = settings_pair(budget, answer)
    hf_generate_tok_s(engine, prompt, 8)                       # warm-up: first calls pay one-off costs
    run_trace(engine, prompt, dataclasses.replace(configs["app_default"], max_new_tokens=8))
    hf, wall, model, observe, ttft, tpot = [], defaultdict(list), [], [], [], []
    alone_tpot, paired_tpot = [], []
    for _ in range(repeats):                 # interleaved: a slow moment of the machine hits all alike
        hf.append(hf_generate_tok_s(engine, prompt, new_tokens))
        for name, config in configs.items():
            trace = run_trace(engine, prompt, config)
            wall[name].append(wall_tok_s(trace))
            if name == "plain":
                model.append(trace.summary.tokens_per_s)
                ttft.append(trace.summary.ttft_ms)
                tpot.append(trace.summary.tpot_ms)
                plain_trace = trace
            if name == "app_default":
                observe.append(trace.summary.observe_ms / trace.summary.new_tokens)
                app_trace = trace
        alone_tpot.append(run_trace(engine, prompt, reasoning).summary.tpot_ms)
        for _normal, paired_run, _finished in interleave(engine, prompt, budget, answer):
            pass
        paired_tpot.append(paired_run.summary.tpot_ms)
    lens = lens_costs(engine, app_trace)
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the big buffer below
    reference = llamacpp_reference(engine, prompt, new_tokens, repeats)
    bandwidth = read_bandwidth(engine.device) / 1e9
    weight_bytes = engine.info.parameter_bytes
    med = statistics.median
    return {
        "model": engine.info.id, "device": engine.info.device, "dtype": engine.info.dtype,
        "threads": torch.get_num_threads(), "prompt_tokens": plain_trace.prefill.tokens,
        "new_tokens": new_tokens, "repeats": repeats, "capture_via": engine.capture_via,
        "hf_generate_tok_s": med(hf),
        "engine_tok_s": med(model),                       # the model's own clock (what the page shows)
        "engine_wall_tok_s": med(wall["plain"]),
        "engine_attention_tok_s": med(wall["attention"]),
        "engine_lens_tok_s": med(wall["lens"]),
        "engine_attention_lens_tok_s": med(wall["attention_lens"]),
        "app_default_tok_s": med(wall["app_default"]),
        # ratios: the median over rounds of each round's ratio (its runs ran back to back, so a slow
        # minute of this shared machine divides out instead of landing on one side)
        "overhead_ratio": paired(wall["plain"], hf),
        "attention_ratio": paired(wall["attention"], hf),
        "lens_ratio": paired(wall["lens"], hf),
        "attention_lens_ratio": paired(wall["attention_lens"], hf),
        "app_default_ratio": paired(wall["app_default"], hf),
        # the lens's own cost, each round's lens run over its plain run (1: free; the target is >= 0.95)
        "lens_cost_ratio": paired(wall["lens"], wall["plain"]),
        "attention_lens_cost_ratio": paired(wall["attention_lens"], wall["attention"]),
        "observe_ms_per_step": med(observe),
        # the logit lens off the run's clock (engine/model/lens.py): one step's on view, a whole run's at export
        **lens,
        "compare_tpot_ratio": paired(paired_tpot, alone_tpot),
        "reasoning_tpot_alone_ms": med(alone_tpot), "reasoning_tpot_paired_ms": med(paired_tpot),
        "ttft_ms": med(ttft), "tpot_ms": med(tpot),
        # llama.cpp on the same GGUF (its 4-bit weights and kernels) next to our decode speed
        "decode_tok_s": 1000 / med(tpot),
        "llamacpp_decode_tok_s": reference.get("decode_tok_s"),
        "decode_vs_llamacpp": (1000 / med(tpot)) / reference["decode_tok_s"] if "decode_tok_s" in reference else None,
        "llamacpp": reference,
        "read_bandwidth_gbs": bandwidth, "weight_bytes": weight_bytes,
        "limit_tpot_ms": weight_bytes / (bandwidth * 1e9) * 1000,
        "peak_rss_mb": peak_rss_mb,
        "trace_json_bytes": len(plain_trace.to_json()),
        # the file a visitor downloads (the lens computed, the kept states dropped), and the run as kept
        "app_default_trace_json_bytes": len(exported(engine, app_trace).to_json()),
        "app_default_trace_kept_json_bytes": len(app_trace.to_json()),
        "spread": {"hf_generate_tok_s": spread(hf), "engine_tok_s": spread(model),
                   **{f"{name}_wall_tok_s": spread(v) for name, v in wall.items()},
                   "observe_ms_per_step": spread(observe),
                   "reasoning_tpot_alone_ms": spread(alone_tpot), "reasoning_tpot_paired_ms": spread(paired_tpot)},
    }
