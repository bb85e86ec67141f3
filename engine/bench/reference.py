"""llama.cpp on the same GGUF file, as the reference for our speed (`python -m engine bench`).

The embedded model is a Q4_1 GGUF; llama.cpp runs it as it is (4-bit weights, its own kernels),
while we run it dequantised to fp32 through PyTorch. Decode tokens/s here is theirs, measured the
way we measure ours: greedy, the same chat prompt, `new_tokens` forced (end-of-text banned), and
TPOT = (E2E - TTFT) / (new_tokens - 1) from a streamed completion.
"""

from __future__ import annotations

import importlib.util
import statistics
import time


def available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def decode_speed(gguf: str, prompt_text: str, new_tokens: int = 64, repeats: int = 3, threads: int = 2) -> dict:
    """{"decode_tok_s", "ttft_ms", "tpot_ms", "spread"...} of llama.cpp on `gguf`, `prompt_text`
    already templated (its special tokens are parsed)."""
    from llama_cpp import Llama
    llm = Llama(model_path=gguf, n_threads=threads, n_threads_batch=threads, n_ctx=1024, verbose=False)
    eos = llm.token_eos()

    def ban_eos(_ids, logits):
        logits[eos] = -float("inf")
        return logits

    def once(n: int) -> tuple[float, float]:
        llm.reset()                                       # no prompt cache carried between runs
        start = time.perf_counter()
        first = end = None
        count = 0
        for chunk in llm.create_completion(prompt_text, max_tokens=n, temperature=0.0, repeat_penalty=1.0,
                                           top_k=1, stream=True, logits_processor=[ban_eos]):
            if chunk["choices"][0]["finish_reason"] is None:      # a token (the last chunk only says "length")
                count += 1
                end = time.perf_counter()
                first = first or end
        if count != n:
            raise RuntimeError(f"llama.cpp streamed {count} chunks for {n} tokens")
        return (first - start) * 1000, (end - first) * 1000 / (n - 1)

    once(8)                                               # warm-up
    ttft, tpot = zip(*(once(new_tokens) for _ in range(repeats)))
    med = statistics.median
    return {"decode_tok_s": 1000 / med(tpot), "ttft_ms": med(ttft), "tpot_ms": med(tpot), "threads": threads,
            "new_tokens": new_tokens, "repeats": repeats,
            "spread": {"tpot_ms": {"median": med(tpot), "min": min(tpot), "max": max(tpot)}}}
