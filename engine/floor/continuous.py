"""The workload through transformers' continuous batching, requests fed at their arrival times.

`model.init_continuous_batching(...)` gives a manager whose loop (a thread) adds and removes
requests every step over a paged KV cache (`ContinuousBatchingConfig`: page size, blocks, query
tokens per step, scheduler, block sharing). A feeder thread adds each request when its arrival
time comes; this thread collects the results. The model must run a kernel the paged cache knows
("sdpa" here: the caller switches its copy, engine/floor/serve.py).
"""

from __future__ import annotations

import threading
import time

from transformers import GenerationConfig
from transformers.generation.configuration_utils import ContinuousBatchingConfig

from engine.errors import EngineError
from engine.floor.watch import Clock, Watcher
from engine.schema.floor import CacheFacts, FloorSettings, Lane, Mode

FEEDER_WAIT_S = 30.0       # the request feeder, told to stop, is waited for this long


class FloorStopped(EngineError):
    """The run was cancelled or ran past its time budget."""


def generation_config(engine, new_tokens: int) -> GenerationConfig:
    """Greedy, `new_tokens` at most, the model's end tokens: the same for all three ways."""
    return GenerationConfig(do_sample=False, max_new_tokens=new_tokens, eos_token_id=sorted(engine.eos_ids),
                            pad_token_id=engine.tokenizer.pad_token_id or min(engine.eos_ids),
                            return_dict_in_generate=True)   # `generate` hands back its cache (baselines)


def serve(engine, inputs: list[list[int]], arrival_s: list[float], s: FloorSettings, stop: threading.Event,
          sharing: bool = True) -> tuple[list[Lane], list, CacheFacts, Mode]:
    config = ContinuousBatchingConfig(
        page_size=s.page_size, num_blocks=s.num_blocks, max_batch_tokens=s.max_batch_tokens,
        scheduler_type=s.scheduler, allow_block_sharing=sharing, use_async_batching=False,
        auto_switch_to_flash=False)
    manager = engine.model.init_continuous_batching(generation_config=generation_config(engine, s.new_tokens),
                                                    continuous_batching_config=config)
    ids = [f"r{i}" for i in range(len(inputs))]
    clock = Clock()
    watcher = Watcher(manager, clock, {r: i for i, r in enumerate(ids)})
    arrived: dict[str, float] = {}

    def feed() -> None:
        for rid, prompt, at in zip(ids, inputs, arrival_s):
            while not stop.is_set() and clock.now() < at * 1000.0:
                time.sleep(min(0.005, max(at * 1000.0 - clock.now(), 0) / 1000.0))
            if stop.is_set():
                return
            arrived[rid] = clock.now()
            manager.add_request(prompt, request_id=rid, max_new_tokens=s.new_tokens, record_timestamps=True)

    results = {}
    clock.restart()                      # the cache is allocated: the first arrival is due now
    manager.start()
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        while len(results) < len(ids):
            if stop.is_set():
                raise FloorStopped("the serving-floor run was stopped", "floor_stopped")
            out = manager.get_result(timeout=0.2)
            if out is None and not manager.is_running():
                raise EngineError("the continuous-batching loop ended early (see the log)", "floor_failed",
                                  detail="the loop ended early")
            if out is not None and out.is_finished():
                if out.error:
                    raise EngineError(f"request {out.request_id} failed: {out.error}", "floor_failed",
                                      detail=f"{out.request_id}: {str(out.error)[:200]}")
                results[out.request_id] = out
    finally:
        unfinished = len(results) < len(ids)
        if unfinished:
            stop.set()                   # the feeder stops adding requests too
        feeder.join(FEEDER_WAIT_S)       # it looks at `stop` every 5 ms; one stuck in add_request is left, daemon
        manager.stop(block=True, timeout=30, hard_stop=unfinished)   # a stop does not wait for the rest
        manager.destroy()
    lanes = [_lane(rid, results[rid], arrived[rid], clock, watcher, i) for i, rid in enumerate(ids)]
    cache = CacheFacts(page_size=s.page_size, num_blocks=int(watcher.cache.num_blocks),
                       bytes_per_block=watcher.bytes_per_block, peak_blocks=watcher.peak_blocks(),
                       block_steps=watcher.block_steps())
    mode = Mode(wall_ms=max(lane.token_ms[-1] for lane in lanes) - min(arrived.values()),
                tokens=sum(len(lane.tokens) for lane in lanes), ttft_ms=[lane.ttft_ms for lane in lanes],
                e2el_ms=[lane.e2el_ms for lane in lanes], memory_bytes=cache.peak_blocks * cache.bytes_per_block,
                memory_note="blocks")
    return lanes, watcher.frames, cache, mode


def _lane(rid: str, out, arrival_ms: float, clock: Clock, watcher: Watcher, index: int) -> Lane:
    chunks = [[f.start_ms, f.end_ms, float(q)] for f in watcher.frames for lane, q, prefill in f.batch
              if lane == index and prefill]
    prompt = len(out.prompt_ids)
    return Lane(id=rid, prompt_tokens=prompt, reused_tokens=max(prompt - int(sum(c[2] for c in chunks)), 0),
                arrival_ms=arrival_ms, start_ms=clock.work(out.lifespan[0]), end_ms=clock.work(out.lifespan[1]),
                chunks=chunks, token_ms=[clock.work(t) for t in out.timestamps],
                tokens=[int(t) for t in out.generated_tokens], same_as_generate=False)
