"""A serving-floor run in figures: what `python -m engine floor` prints and /serve answers (no torch)."""

from __future__ import annotations

import statistics

from engine.schema.floor import MODES, Floor
from engine.schema.floor_check import check_floor
from engine.schema.serial import from_plain


def figures(data: dict) -> dict:
    """What the command prints: per way throughput and TTFT percentiles, tokens equal, blocks."""
    f = check_floor(from_plain(Floor, data, "floor"))
    out = {"requests": len(f.lanes), "settings": data["settings"]}
    for name in MODES:
        m = f.mode(name)
        ttft = sorted(m.ttft_ms)
        out[name] = {"throughput_tok_s": round(m.throughput, 2), "wall_ms": round(m.wall_ms, 1), "tokens": m.tokens,
                     "ttft_p50_ms": round(statistics.median(ttft), 1),
                     "ttft_p95_ms": round(ttft[min(len(ttft) - 1, round(0.95 * (len(ttft) - 1)))], 1),
                     "memory_bytes": m.memory_bytes, "memory_is": m.memory_note}
    alone = f.mode("one_at_a_time").throughput
    out["continuous_vs_one_at_a_time"] = round(f.mode("continuous").throughput / alone, 3) if alone else None
    out["tokens_equal_generate"] = sum(lane.same_as_generate for lane in f.lanes)
    out["tpot_ms"] = [round(lane.tpot_ms, 1) if lane.tpot_ms else None for lane in f.lanes]
    out["blocks"] = {"bytes_per_block": f.cache.bytes_per_block, "peak_shared": f.cache.peak_blocks,
                     "peak_unshared": f.unshared.peak_blocks if f.unshared else None,
                     "block_steps_shared": f.cache.block_steps,
                     "block_steps_unshared": f.unshared.block_steps if f.unshared else None,
                     "reused_prompt_tokens": sum(lane.reused_tokens for lane in f.lanes)}
    # what a decode step costs for n requests (median ms): why batching pays, or does not, here
    out["decode_step_ms_by_batch"] = {str(n): round(statistics.median(v), 1) for n, v in f.decode_steps().items()}
    return out
