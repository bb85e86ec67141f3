"""`python -m engine fork --bench`: what prefix caching buys, measured in one run.

One run of a ~256-token prompt and 64 generated tokens, its cache kept; then, at several fork
points, a greedy branch with the step's second candidate, interleaved with the same first token
recomputed from scratch (prompt + prefix + chosen token in one fresh pass). Medians of `repeats`
and their ratio; the memory each branch's cache copy holds.
"""

from __future__ import annotations

import statistics

from engine.run.fork import measure_recompute, run_fork
from engine.run.generate import run_trace
from engine.lab.measure import spread
from engine.schema.trace import Settings

# ~256 tokens of plain prose, so the prefix is long enough for the difference to matter
PASSAGE = ("The history of the bicycle is a story of small changes. The first machines had no pedals: riders "
           "pushed them along with their feet. Later designs put pedals on a huge front wheel, fast but "
           "dangerous, until the chain drive let both wheels be the same size. Air-filled tyres made the "
           "ride smooth, and gears let riders climb hills without standing up. ")


ASK = "\n\nSummarise this passage."


def fork_bench(engine, prompt_tokens: int = 256, new_tokens: int = 64, repeats: int = 5) -> dict:
    settings = Settings(max_new_tokens=new_tokens, ignore_eos=True)

    def length(text: str) -> int:       # the prompt's tokens as the run sends them (chat template on)
        return len(engine.encode(engine.apply_template(text, settings), templated=True))
    words = (PASSAGE * 8).split(" ")
    while length(" ".join(words) + ASK) > prompt_tokens:
        words.pop()
    prompt = " ".join(words) + ASK
    trace = run_trace(engine, prompt, settings, keep_cache=True)
    rows = []
    for at in (1, new_tokens // 2, new_tokens - 1):
        step = trace.steps[at]
        token = next(c.id for c in step.candidates if c.id != step.id)
        reuse, recompute, memory, same = [], [], [], []
        for _ in range(repeats):
            forked = run_fork(engine, trace, at, token, max_new_tokens=8)
            branch = forked.branches[-1]
            measured = measure_recompute(engine, forked, branch.id).branches[-1]
            reuse.append(branch.summary.ttft_ms)
            recompute.append(measured.recompute_ms)
            memory.append(branch.cache_bytes)
            same.append(len(branch.steps) > 1 and measured.recompute_token == branch.steps[1].id)
        rows.append({"at": at, "prefix_tokens": branch.reused_tokens, "ttft_reuse_ms": spread(reuse),
                     "ttft_recompute_ms": spread(recompute),
                     "ratio": statistics.median(a / b for a, b in zip(reuse, recompute)),
                     "copy_ms": branch.copy_ms, "branch_cache_bytes": max(memory),
                     "same_first_token": all(same)})
    return {"prompt_tokens": trace.prefill.tokens, "new_tokens": len(trace.steps), "repeats": repeats,
            "device": str(engine.device), "model": engine.info.id, "forks": rows,
            "worst_ratio": max(r["ratio"] for r in rows)}
