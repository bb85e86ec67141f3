"""The serving floor on the real model: transformers' continuous batching serves a small workload,
each request's tokens equal its own `generate`, the lanes agree with the figures, and requests with
one system prompt hold its blocks once (read from the paged cache's own tables)."""

import json
import threading

import pytest

from engine.errors import EngineError, InvalidRequest
from engine.floor.serve import run_floor
from engine.schema.floor_check import read_floor

SMALL = dict(requests=4, arrival="poisson", rate=8.0, prompt_tokens=64, shared_prefix=32, new_tokens=6,
             page_size=8, num_blocks=96, max_batch_tokens=48)


@pytest.fixture(scope="module")
def floor(engine):
    data = run_floor(engine, **SMALL)
    return read_floor(json.dumps(data))          # what a run writes reads back through the checks


@pytest.mark.numerics
def test_each_request_gets_the_tokens_of_its_own_generate(floor):
    assert [lane.same_as_generate for lane in floor.lanes] == [True] * 4
    assert all(1 <= len(lane.tokens) <= 6 for lane in floor.lanes)


@pytest.mark.numerics
def test_the_lanes_run_forward_and_agree_with_the_figures(floor):
    c = floor.mode("continuous")
    for lane, ttft, e2el in zip(floor.lanes, c.ttft_ms, c.e2el_ms):
        times = [lane.arrival_ms, lane.start_ms, *lane.token_ms]
        assert times == sorted(times)
        assert ttft == pytest.approx(lane.token_ms[0] - lane.arrival_ms)
        assert e2el == pytest.approx(lane.token_ms[-1] - lane.arrival_ms)
        # every prompt position was prefilled in this run's chunks or found in shared blocks
        assert lane.reused_tokens + sum(chunk[2] for chunk in lane.chunks) == lane.prompt_tokens
        for chunk in lane.chunks:            # a chunk of at most max_batch_tokens, inside the lane
            assert chunk[2] <= SMALL["max_batch_tokens"] and lane.start_ms <= chunk[0] + 1e-6
    assert c.tokens == sum(len(lane.tokens) for lane in floor.lanes)
    first = min(lane.arrival_ms for lane in floor.lanes)
    assert 0 <= first < 20                                 # the clock starts as the first request is due
    assert c.wall_ms == pytest.approx(max(lane.token_ms[-1] for lane in floor.lanes) - first)
    for name in ("one_at_a_time", "static"):
        assert floor.mode(name).tokens == c.tokens       # greedy: the same tokens, however served


def test_the_prompt_is_split_into_chunks_of_the_step_budget(floor):
    # 64-token prompts, 48 query tokens a step: the first request (nothing to share yet) in two chunks
    first = floor.lanes[0]
    assert first.reused_tokens == 0 and len(first.chunks) == 2


def test_shared_blocks_are_held_once_and_counted_from_the_cache(floor):
    shared_steps = [f for f in floor.frames if f.refs]
    assert shared_steps, "no step had a block held by two requests"
    for f in shared_steps:
        for block, holders in f.refs:
            tables = sum(block in table for table in f.tables)
            assert 2 <= tables <= holders
    assert sum(lane.reused_tokens for lane in floor.lanes) > 0
    assert floor.unshared is not None
    assert floor.cache.peak_blocks < floor.unshared.peak_blocks
    assert floor.cache.block_steps < floor.unshared.block_steps
    assert floor.cache.bytes_per_block == SMALL["page_size"] * floor.model.kv_bytes(1)


def test_bad_settings_and_a_cancel_are_clear(engine):
    kernel = engine.model.config._attn_implementation
    with pytest.raises(InvalidRequest):
        run_floor(engine, **{**SMALL, "requests": 0})
    with pytest.raises(InvalidRequest):
        run_floor(engine, **{**SMALL, "page_size": 0})
    with pytest.raises(EngineError) as unknown:
        run_floor(engine, **{**SMALL, "pages": 3})
    assert unknown.value.key == "floor_unknown"
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(EngineError) as stopped:
        run_floor(engine, cancel=cancel, **SMALL)
    assert stopped.value.key == "floor_stopped"
    assert engine.model.config._attn_implementation == kernel      # the page's runs get their kernel back


def test_a_forked_runs_lineages_share_their_prefix_blocks(engine):
    """The fork chapter's tree served as requests: the run and two branches share the prompt and the
    steps before the fork, and the allocator holds those blocks once."""
    from engine.floor.workload import branch_prompts
    from engine.run.fork import run_fork
    from engine.run.generate import run_trace
    from engine.schema.trace import Settings
    trace = run_trace(engine, "Name three fruits that grow on trees.", Settings(max_new_tokens=6))
    for rank in (1, 2):              # fork step 3 with its second and third candidates
        trace = run_fork(engine, trace, 3, trace.steps[3].candidates[rank].id, max_new_tokens=4)
    names, inputs = branch_prompts(trace)
    assert names == ["run", "b1", "b2"] and len({tuple(i[:-1]) for i in inputs}) == 1   # differ in the last token only
    floor = read_floor(json.dumps(run_floor(engine, inputs=inputs, names=names, new_tokens=4, page_size=4,
                                            num_blocks=128, max_batch_tokens=64)))
    assert [lane.id for lane in floor.lanes] == names and floor.settings.source == "branches"
    assert all(lane.same_as_generate for lane in floor.lanes)
    assert any(f.refs for f in floor.frames)
    assert floor.cache.peak_blocks < floor.unshared.peak_blocks


def test_a_stop_in_the_middle_ends_the_run_soon(engine):
    """Stop while continuous batching is serving: the run ends within seconds, not after every request."""
    import time
    cancel = threading.Event()
    threading.Timer(1.5, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(EngineError) as stopped:
        run_floor(engine, cancel=cancel, **{**SMALL, "requests": 8, "new_tokens": 200, "num_blocks": 400})
    assert stopped.value.key == "floor_stopped"
    assert time.monotonic() - started < 15


def test_each_way_carries_the_machines_load_while_it_ran(floor):
    """Each way is watched on its own (they run one after another; engine/lab/host.py), and reads back."""
    for mode in floor.modes:
        assert mode.load is None or (0 <= mode.load.others <= 1 and mode.load.cpus >= 1 and mode.load.seconds >= 0)
    assert any(mode.load is not None for mode in floor.modes) or not open("/proc/stat").read()
