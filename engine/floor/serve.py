"""One serving-floor run: the workload served continuously, one at a time and as a static batch.

    run_floor(engine, progress=None, cancel=None, **settings) -> the Floor file's JSON data

The back room's target (engine/host/backroom.py: the page's run stands still while a visitor's
run goes, and its clocks leave those pauses out), and what `python -m engine floor` and /serve
call. All ways run on this process's copy of the model, switched to "sdpa" for the run (the paged
cache refuses our capturing attention function), greedy, one after another, under the engine's
lock. With a shared prefix (or a fork tree's lineages) the continuous run is repeated with block
sharing off, to count the blocks the same requests hold without it.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timezone

from engine.errors import EngineError
from engine.floor import fit
from engine.floor.baselines import one_at_a_time, static_batch
from engine.floor.continuous import FloorStopped, serve
from engine.floor.workload import arrivals, check, prompts
from engine.lab.host import watching_load
from engine.model.clock import work_s
from engine.schema.floor import Floor, FloorSettings
from engine.schema.load import HostLoad
from engine.schema.serial import to_plain

KERNEL = "sdpa"


def _load(watch) -> HostLoad | None:
    found = watch.result()
    return HostLoad(**found) if found else None


def settings_from(values: dict) -> FloorSettings:
    """FloorSettings from keyword values; an unknown name is refused (a typo must not run the defaults)."""
    names = {f.name for f in dataclasses.fields(FloorSettings)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise EngineError(f"unknown setting {unknown[0]!r}", "floor_unknown", name=unknown[0])
    return FloorSettings(**values)


def run_floor(engine, progress=None, cancel: threading.Event | None = None, inputs: list | None = None,
              names: list | None = None, **values) -> dict:
    """`inputs` (token ids per request, `names` for them) serves those requests, all at once, instead
    of the settings' workload: a forked run's lineages (engine/floor/workload.branch_prompts)."""
    s = settings_from(values)
    if inputs is not None:
        inputs = _token_lists(inputs, engine.info.vocab_size)
        s = dataclasses.replace(s, source="branches", arrival="burst", requests=len(inputs), shared_prefix=0,
                                prompt_tokens=max(len(i) for i in inputs))
    check(s, engine.limits, engine.info.kv_bytes(1), longest=None if inputs is None else s.prompt_tokens)
    say = progress or (lambda fraction, text="": None)     # text: which way runs now (a key the page names)
    stop = threading.Event()
    budget = _Budget(engine.limits.floor_seconds, stop, cancel)
    inputs, arrival_s = inputs or prompts(engine.tokenizer, s), arrivals(s)
    try:
        with engine.lock, fit.floor_kernel(engine, KERNEL):
            fit.require(engine)             # an architecture the paged cache cannot run: a keyed refusal
            _warm_up(engine, inputs[0])
            say(0.05, "continuous")
            # each way watched for the machine's other work: the ways run one after another, and a
            # busy moment of a shared machine that meets one of them moves the ratios between them
            with watching_load() as watch:
                lanes, frames, cache, continuous = serve(engine, inputs, arrival_s, s, stop)
            continuous.load = _load(watch)
            say(0.35, "one_at_a_time")
            with watching_load() as watch:
                alone, own_tokens = one_at_a_time(engine, inputs, arrival_s, s, stop)
            alone.load = _load(watch)
            say(0.75, "static")
            with watching_load() as watch:
                static = static_batch(engine, inputs, arrival_s, s, stop)
            static.load = _load(watch)
            unshared = None
            if s.shared_prefix or s.source == "branches":
                say(0.85, "unshared")
                unshared = serve(engine, inputs, arrival_s, s, stop, sharing=False)[2]
    except FloorStopped:
        if budget.over:
            raise EngineError(f"the run took longer than this host's {engine.limits.floor_seconds} s",
                              "floor_over_budget", seconds=engine.limits.floor_seconds) from None
        raise
    finally:
        budget.done()
    for i, (lane, own) in enumerate(zip(lanes, own_tokens)):
        lane.same_as_generate = lane.tokens == own
        lane.id = str(names[i])[:16] if names and i < len(names) else lane.id
    floor = Floor(model=engine.info, settings=s, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  cache=cache, lanes=lanes, frames=frames, modes=[continuous, alone, static], unshared=unshared,
                  texts=[engine.tokenizer.decode(lane.tokens, skip_special_tokens=True) for lane in lanes])
    say(1.0, "done")
    return to_plain(floor)


def _token_lists(inputs, vocab: int) -> list[list[int]]:
    ok = isinstance(inputs, list) and inputs and all(
        isinstance(r, list) and r and all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab for t in r)
        for r in inputs)
    if not ok:
        raise EngineError("inputs must be lists of token ids of this model", "floor_inputs")
    return inputs


def _warm_up(engine, prompt: list[int]) -> None:
    """One short pass first, so no way pays the process's first-call costs for the others."""
    import torch
    with torch.inference_mode():
        engine.model.generate(torch.tensor([prompt], device=engine.device), max_new_tokens=2, do_sample=False,
                              pad_token_id=engine.tokenizer.pad_token_id or min(engine.eos_ids))


class _Budget:
    """Sets `stop` when the time budget is spent or the caller cancels."""

    def __init__(self, seconds: float, stop: threading.Event, cancel: threading.Event | None):
        self.over, self._done = False, threading.Event()

        def watch() -> None:
            deadline = work_s() + seconds      # time the job stood still is not spent
            while not self._done.wait(0.2):
                if cancel is not None and cancel.is_set():
                    stop.set()
                if work_s() > deadline:
                    self.over = True
                    stop.set()
        threading.Thread(target=watch, daemon=True).start()

    def done(self) -> None:
        self._done.set()
