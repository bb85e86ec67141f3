"""The decode step as one graph compiled in this process: the GPU's fast path (gpt-fast's recipe;
transformers' own `generate` does the same on CUDA).

An eager decode step on a GPU launches each of its ~364 operations from Python (measured on an H200,
docs/performance.md: 23.5-28.9 ms a step for the embedded model, against ~0.06 ms to read its weights).
Here the step (engine/compiled/step.py, the same step the CPU's AOTInductor package is exported from)
is compiled once per bucket of cache length with `torch.compile(fullgraph=True, dynamic=False)`:
on CUDA with mode="reduce-overhead", so Inductor captures it as a CUDA graph and a step is one launch.

- One persistent static cache per bucket (`GraphStep.cache`), allocated once; transformers' StaticLayer
  marks its tensors as static addresses, so the graph replays over them without copies. A run adopts it:
  its prefill is copied in and the filled length set; nothing is reallocated. One run at a time holds it
  (engine/compiled/fast.py: a second run in progress decodes eagerly).
- The token and its position arrive as tensors: one graph serves every position of every run (dynamo
  compiles once per bucket; tests/tiny/test_graph.py counts it).
- The watching is in the graph: each layer's attention row for the new token (over the bucket, the
  unwritten slots masked) and each layer's output for the lens are outputs of the step. A replay
  overwrites its outputs, so what a run keeps is cloned before the next one.
- Checked teacher-forced before use (`check`): both paths are fed the same tokens, each step's top
  token is compared (a near tie broken the other way counts as the same: check.same_choice) and the
  largest logit difference is kept against a per-dtype tolerance. A failed check says what differed;
  the engine stays eager. Nothing is written to disk: the next start compiles and checks again.

TBT_GRAPH_BACKEND names dynamo's backend ("inductor" by default; the tests' "aot_eager" traces the
same graph, fullgraph included, without Inductor's minutes of C++ compiling on two cores).
"""

from __future__ import annotations

import statistics
import time

import torch
from transformers import DynamicCache, StaticCache

from engine import environment
from engine.compiled.check import CHECK_STEPS, same_choice
from engine.compiled.step import prime, watched_step
from engine.model.clock import now_ms

# The largest logit difference from eager, over the logits' largest magnitude, that a graph may show:
# fp32 adds the same terms in another order (~1e-6 apart); bf16 and fp16 round every product to 8 or
# 11 bits, and eager and the graph take other kernels.
LOGIT_TOL = {torch.float32: 1e-3, torch.float64: 1e-3}
LOGIT_TOL_HALF = 5e-2
WARM_CALLS = 3        # Inductor's CUDA graphs are recorded on the second or third call: warm past them
# dynamo keeps at most `recompile_limit` graphs per code object, and every bucket of every model is one
# graph of `_Module.forward`'s: at its default (8) the ninth (three models of three buckets; the tiny tier's
# ninth architecture) failed with FailOnRecompileLimitHit. No other code in the process compiles.
GRAPHS_KEPT = 64


def backend() -> str:
    return environment.graph_backend()


class _Module(torch.nn.Module):
    def __init__(self, model, cache: StaticCache):
        super().__init__()
        self.model, self.cache = model, cache

    def forward(self, ids, pos):
        return watched_step(self.model, ids, pos, self.cache)


class GraphStep:
    """The compiled step of one bucket over its persistent cache. `model` is the fast path's own copy
    of the model (engine/compiled/fast.py: attention.FAST_NAME, no hooks)."""

    def __init__(self, model, device: torch.device, bucket: int):
        self.model, self.device, self.bucket = model, torch.device(device), bucket
        self.cache = StaticCache(config=model.config, max_cache_len=bucket)
        self.ids = torch.zeros((1, 1), dtype=torch.long, device=self.device)
        self.pos = torch.zeros((1,), dtype=torch.long, device=self.device)
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, GRAPHS_KEPT)
        b = backend()
        mode = "reduce-overhead" if b == "inductor" and self.device.type == "cuda" else None
        self.compiled = torch.compile(_Module(model, self.cache), backend=b, mode=mode, fullgraph=True, dynamic=False)

    def adopt(self, cache: DynamicCache) -> StaticCache:
        """The persistent cache holding what `cache` holds (a prefill), in place: no tensor moves."""
        n = cache.get_seq_length()
        for i, layer in enumerate(cache.layers):
            mine = self.cache.layers[i]
            if mine.is_initialized:
                mine.cumulative_length.zero_()
            self.cache.update(layer.keys, layer.values, i)      # the first adopt allocates (StaticLayer)
        assert self.cache.layers[0].keys.shape[-2] == self.bucket and n <= self.bucket
        return self.cache

    def __call__(self, token: int, position: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step: (logits [vocab] float32, rows [layers, heads, bucket], hidden [layers + 1, 1, 1, hidden]),
        each the caller's own (cloned out of the graph's buffers)."""
        self.ids.fill_(token)             # filled on the device: no copy from the host, which would wait for it
        self.pos.fill_(position)
        ids, pos = self.ids, self.pos
        if self.device.type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()
        with torch.no_grad():
            logits, rows, hidden = self.compiled(ids, pos)
        return logits[0].float().clone(), rows.clone(), hidden.clone()

    def build(self) -> dict:
        """Compile (on the first calls) and check against eager; returns what it measured."""
        prime(self.model, self.device)
        start = time.monotonic()
        prompt = _prompt(self.model.config, self.bucket, self.device)
        self.adopt(_prefill(self.model, prompt)[0])
        for i in range(WARM_CALLS):
            self(1, prompt.shape[1] + i)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        meta = {"kind": "graph", "backend": backend(), "bucket": self.bucket, "compile_s": round(time.monotonic() - start, 1)}
        return {**meta, **check(self)}


def _prompt(config, bucket: int, device) -> torch.Tensor:
    """A few fixed token ids (only the choices matter), within the vocabulary and the bucket."""
    prompt = torch.tensor([[1, 504, 3575, 282, 4649, 314]], device=device)[:, : max(2, min(6, bucket // 2))]
    return prompt.clamp(max=config.vocab_size - 1)


def _prefill(model, prompt: torch.Tensor) -> tuple[DynamicCache, torch.Tensor]:
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        out = model(input_ids=prompt, cache=cache, use_cache=True, logits_to_keep=1)
    return cache, out.logits[0, -1]


def check(step: GraphStep, steps: int = CHECK_STEPS) -> dict:
    """Teacher-forced: eager (the same model copy, a DynamicCache) and the graph fed eager's greedy token
    at every step. The same choice at every step (a near tie either way), the share of steps whose
    top tokens are equal, the largest logit difference over the logits' scale, and each path's median
    step time over the second half (the first steps warm allocators)."""
    model, device = step.model, step.device
    prompt = _prompt(model.config, step.bucket, device)
    dynamic, eager_logits = _prefill(model, prompt)
    step.adopt(_prefill(model, prompt)[0])
    token, position = int(eager_logits.argmax()), prompt.shape[1]
    same, equal, worst, eager_ms, graph_ms = [], [], 0.0, [], []
    for _ in range(min(steps, step.bucket - position)):
        start = now_ms(device)
        with torch.no_grad():
            eager_logits = model(input_ids=torch.tensor([[token]], device=device), cache=dynamic, use_cache=True,
                                 logits_to_keep=1).logits[0, -1].float()
        eager_ms.append(now_ms(device) - start)
        start = now_ms(device)
        logits = step(token, position)[0]
        graph_ms.append(now_ms(device) - start)
        top = int(logits.argmax())
        same.append(same_choice(eager_logits.to(model.dtype), top))
        equal.append(top == int(eager_logits.argmax()))
        worst = max(worst, float((logits - eager_logits).abs().max() / eager_logits.abs().max().clamp(min=1e-12)))
        token, position = int(eager_logits.argmax()), position + 1
    tol = LOGIT_TOL.get(model.dtype, LOGIT_TOL_HALF)
    ok = all(same) and worst <= tol
    half = len(eager_ms) // 2
    result = {"check_steps": len(same), "same_tokens": ok, "top1_agree": round(sum(equal) / max(1, len(equal)), 4),
              "max_logit_diff": float(f"{worst:.3g}"), "logit_tol": tol,
              "eager_ms": round(statistics.median(eager_ms[half:]), 3), "compiled_ms": round(statistics.median(graph_ms[half:]), 3)}
    result["ratio"] = round(result["eager_ms"] / result["compiled_ms"], 3) if result["compiled_ms"] > 0 else 0.0
    if not ok:
        result["why"] = (f"its tokens differ from eager's at {len(same) - sum(same)} of {len(same)} steps" if not all(same)
                         else f"its logits differ from eager's by {worst:.3g} of their scale (tolerance {tol})")
    return result
