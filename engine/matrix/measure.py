"""Each feature measured on each tiny architecture: a cell is "✓" (it ran and its check held), a
refusal (an EngineError: the message a visitor would get) or an internal error (anything else: a bug).

Cells so far: load (the engine's loader; the attention it asked for and used), trace (attention +
lens on, greedy tokens equal to `model.generate`, attention rows summing to 1), lens (on view),
kv (measured bytes = the per-layer-type formula), reasoning (the template's style), fork (from a
cached prefix, tokens equal to `model.generate`), profile (a decode step op by op, the ops adding up
to the pass), lab (verify and the KV cache experiment in their quick form; the rest of the lab is in
tests/tiny), floor (one request through transformers' continuous batching, or its refusal) and
compiled (whether the AOTInductor step is for this model; it is not built here: minutes per model).
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
import torch

from engine.errors import EngineError
from engine.matrix.tiny import ARCHS, build

PROMPT = "The quick brown fox jumps over the lazy dog, and then"
STEPS = 8


class CheckFailed(Exception):
    """A feature ran but its result is wrong (a cell that must not read ✓)."""


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise CheckFailed(what)


def reference_tokens(path, ids: list[int], steps: int) -> list[int]:
    """The reference: `model.generate` on a fresh copy loaded plainly from the folder (its own default
    attention). The attention mask is given: generate would
    otherwise infer one from the pad id, and mask every prompt token that shares it (OLMo 2's config
    says pad 1, which is <|im_start|> in the embedded tokenizer: 15 of 16 tokens then differ)."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    with torch.inference_mode():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=steps, min_new_tokens=steps, do_sample=False)
    return out[0, len(ids):].tolist()


def cell_load(ctx) -> str:
    info = ctx["engine"].info
    if info.attn_requested:
        return f"✓ ({info.attn_implementation}; {info.attn_requested} refused)"
    return "✓"


def cell_trace(ctx) -> str:
    from engine import Settings, run_trace
    engine = ctx["engine"]
    trace = run_trace(engine, PROMPT, Settings(max_new_tokens=STEPS, ignore_eos=True, attention=True,
                                               logit_lens=True), keep_cache=True)
    ctx["trace"] = trace
    ids = [t.id for t in trace.prompt.tokens]
    _check([s.id for s in trace.steps] == reference_tokens(engine.info.id, ids, STEPS), "tokens differ from model.generate")
    for packed in trace.attention.steps:
        _check(np.allclose(packed.unpack().sum(-1), 1.0, atol=2e-3), "attention rows do not sum to 1")
    return "✓"


def cell_lens(ctx) -> str:
    from engine.model.lens import steps_lens
    engine, trace = ctx["engine"], ctx["trace"]
    lenses = steps_lens(engine, trace.steps)
    _check(all(lens and len(lens) == engine.info.layers for lens in lenses), "the lens is missing")
    return "✓"


def cell_kv(ctx) -> str:
    trace = ctx["trace"]
    _check(all(s.kv_bytes == trace.model.kv_bytes(s.kv_tokens) for s in trace.steps), "KV bytes differ from the formula")
    sliding = trace.model.sliding_layers
    return f"✓ (layers {', '.join(map(str, sliding))} slide)" if sliding else "✓"


def cell_reasoning(ctx) -> str:
    from engine import Settings, run_trace
    engine = ctx["engine"]
    trace = run_trace(engine, "What is 2+2?", Settings(max_new_tokens=8, mode="reasoning", thinking_budget=3))
    _check(trace.reasoning == engine.thinking_style, "the trace's thinking style is not the engine's")
    return f"✓ ({trace.reasoning})"


def cell_fork(ctx) -> str:
    from engine.run.fork import run_fork
    engine, trace = ctx["engine"], ctx["trace"]
    at = STEPS - 1
    token = trace.steps[at].candidates[1].id
    branch = run_fork(engine, trace, at, token, max_new_tokens=4).branches[-1]
    ids = [t.id for t in trace.prompt.tokens] + [s.id for s in trace.steps[:at]] + [token]
    _check([s.id for s in branch.steps[1:]] == reference_tokens(engine.info.id, ids, 4), "the branch differs from model.generate")
    _check(branch.rebuilt_ms is None, "the kept prefix was not reused")
    return "✓"


def cell_profile(ctx) -> str:
    from engine.profile.run import profile_trace
    profile = profile_trace(ctx["engine"], ctx["trace"], step=2, repeats=1)
    for name, phase in profile["phases"].items():
        _check(abs(phase["ops_sum_ms"] - phase["hooked_ms"]) <= 1e-6 * phase["hooked_ms"],
               f"the {name} ops do not add up to the pass")
    return f"✓ ({len(profile['phases']['decode']['ops'])} ops)"


def cell_lab(ctx) -> str:
    from engine.lab import run_lab
    result = run_lab(ctx["engine"], quick=True, only=["verify", "kv_cache"])
    _check(not result["partial"] and result["kv_cache"]["speedup"] is not None, "the lab stopped short")
    kernel = result["verify"]["attn_implementation"]
    return "✓" if kernel == "sdpa" else f"✓ ({kernel})"


def cell_floor(ctx) -> str:
    from engine.floor.fit import floor_kernel, require
    from engine.floor.serve import KERNEL
    engine = ctx["engine"]
    with engine.lock, floor_kernel(engine, KERNEL):      # as the floor asks: its kernel, under the lock
        require(engine)
    return "✓"


def cell_compiled(ctx) -> str:
    from engine.compiled.fit import refusal
    refused = refusal(ctx["engine"])
    if refused is not None:
        raise refused
    return "✓ (fits; built by the host)"


CELLS = {"load": cell_load, "trace": cell_trace, "lens": cell_lens, "kv": cell_kv, "reasoning": cell_reasoning,
         "fork": cell_fork, "profile": cell_profile, "lab": cell_lab, "floor": cell_floor, "compiled": cell_compiled}
TEMPLATE_OF = {"qwen3": "switch", "qwen3_moe": "switch", "smollm3": "switch"}   # the rest: SmolLM2's (scaffold)


def measure(arch: str, root: str) -> dict:
    """{cell: text} for one architecture; a cell whose prerequisite failed says so."""
    from engine import Engine
    row, ctx = {}, {}
    start = time.perf_counter()
    for name, cell in CELLS.items():
        try:
            if name == "load":
                ctx["engine"] = Engine.load(str(build(arch, TEMPLATE_OF.get(arch, "scaffold"), root)),
                                            device="cpu", dtype="float32")
            row[name] = cell(ctx)
        except EngineError as exc:
            row[name] = f"refused: {exc}"
        except CheckFailed as exc:
            row[name] = f"wrong: {exc}"
        except Exception as exc:  # noqa: BLE001 - the matrix reports every failure as a cell
            row[name] = f"error: {type(exc).__name__}: {str(exc)[:160]}"
        if name in ("load", "trace") and not row[name].startswith("✓"):
            break
    row["seconds"] = round(time.perf_counter() - start, 1)
    return row


def matrix(archs=ARCHS, root: str | None = None) -> dict:
    root = root or tempfile.mkdtemp(prefix="tbt-matrix-")
    return {arch: measure(arch, root) for arch in archs}


def table(result: dict) -> str:
    """The matrix as a Markdown table."""
    cells = list(CELLS)
    lines = ["| architecture | " + " | ".join(cells) + " |", "|---" * (len(cells) + 1) + "|"]
    for arch, row in result.items():
        lines.append(f"| {arch} | " + " | ".join(row.get(c, "—") for c in cells) + " |")
    return "\n".join(lines)
