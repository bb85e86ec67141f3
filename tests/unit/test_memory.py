"""What the server keeps between runs stays bounded: caps count the memory they hold, a visitor's
session goes when the visitor has left, and the cached recordings stay as their files say."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
import torch
from gradio.state_holder import StateHolder
from transformers import DynamicCache

from engine.run.kv_cache import cache_bytes
from engine.run.prefixes import Prefixes, held_bytes
from ui.host.recordings import recorded
from ui.host.sessions import SessionReaper, describe

LAYERS, KV_HEADS, HEAD_DIM = 2, 3, 8


def cache_of(positions: int) -> DynamicCache:
    cache = DynamicCache()
    for layer in range(LAYERS):
        k = torch.randn(1, KV_HEADS, positions, HEAD_DIM)
        cache.update(k, k.clone(), layer)
    return cache


def storage_bytes(cache: DynamicCache) -> int:
    """What the tensors under a cache really pin, counted here apart from the code under test."""
    seen = {}
    for layer in cache.layers:
        for t in (layer.keys, layer.values):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(seen.values())


def test_a_cropped_cache_counts_the_storage_it_pins():
    cache = cache_of(100)
    cache.crop(-90)                                 # views of the 100 positions' storage
    assert cache_bytes(cache) == storage_bytes(cache) // 10        # the figure: the positions written
    assert held_bytes(cache) == storage_bytes(cache)               # the memory: all of it


def test_the_prefix_cap_bounds_the_memory_the_kept_caches_pin():
    one = storage_bytes(cache_of(100))
    prefixes = Prefixes(max_bytes=int(one * 2.5))
    for i in range(6):                              # six cropped caches: each 10 positions, 100 pinned
        cache = cache_of(100)
        cache.crop(-90)
        prefixes.keep(f"run{i}", cache)
    kept = [c for i in range(6) if (c := prefixes.get(f"run{i}")) is not None]
    assert 1 <= len(kept) <= 2
    assert sum(storage_bytes(c) for c in kept) <= prefixes.max_bytes
    assert prefixes.held() == sum(storage_bytes(c) for c in kept)


def test_a_recording_handed_out_is_the_visitors_own():
    before = {kind: t.to_json() for kind, t in recorded("en").items()}
    mine = recorded("en")
    assert {kind: t.to_json() for kind, t in mine.items()} == before       # a copy equal to the file
    shown = mine["next"]
    shown.steps[2].lens = None                      # what with_step_lens does to the trace on show
    shown.steps.append(shown.steps[0])
    shown.branches.append(SimpleNamespace())
    shown.summary.tpot_ms = -1.0
    shown.attention.steps.clear()
    del mine["normal"]
    after = recorded("en")
    assert {kind: t.to_json() for kind, t in after.items()} == before
    assert after["next"] is not shown


def small_demo():
    with gr.Blocks() as demo:
        state = gr.State(None)
        box = gr.Textbox()
    holder = StateHolder()
    holder.set_blocks(demo)
    return demo, holder, state, box


def test_a_session_goes_after_its_grace_and_a_reconnected_one_stays():
    demo, holder, state, _ = small_demo()
    reaper = SessionReaper(grace_s=60)
    reaper.demo = demo
    for s in ("gone", "back"):
        holder[s][state._id] = "a trace"
        reaper.left(SimpleNamespace(session_hash=s))
    left_at = datetime.datetime.now()
    assert reaper.sweep(left_at + datetime.timedelta(seconds=30)) == 0 and "gone" in holder
    holder.time_last_used["back"] = left_at + datetime.timedelta(seconds=40)     # its tab came back
    reaper.sweep(left_at + datetime.timedelta(seconds=61))
    assert "gone" not in holder and "gone" not in holder.time_last_used
    assert "back" in holder and holder["back"][state._id] == "a trace"
    assert reaper.waiting() == 0


def test_the_sessions_held_leaving_and_dropped_are_counted():
    demo, holder, state, _ = small_demo()
    reaper = SessionReaper(grace_s=60)
    reaper.attach(demo)
    assert describe(demo) == {"sessions": 0, "sessions_leaving": 0, "sessions_dropped": 0}
    for s in ("a", "b", "c"):
        holder[s][state._id] = "a trace"
    reaper.left(SimpleNamespace(session_hash="a"))
    reaper.left(SimpleNamespace(session_hash="b"))
    assert describe(demo) == {"sessions": 3, "sessions_leaving": 2, "sessions_dropped": 0}
    reaper.sweep(datetime.datetime.now() + datetime.timedelta(seconds=61))
    assert describe(demo) == {"sessions": 1, "sessions_leaving": 0, "sessions_dropped": 2}
    assert describe(None)["sessions"] == 0


@pytest.fixture(scope="module")
def app_demo():
    mp = pytest.MonkeyPatch()
    mp.setenv("TBT_SESSION_GRACE_S", "0")
    import app
    from ui.host.models import Models, allowed_from_env
    demo = app.build(Models(allowed_from_env(), load=False), [])
    mp.undo()
    return demo


def test_the_app_drops_a_session_when_its_visitor_leaves(app_demo):
    holder = StateHolder()
    holder.set_blocks(app_demo)
    holder["visitor"]                                # a visitor's session: Gradio's copy of the page
    unloads = [dep for dep in app_demo.fns.values() if any(t[1] == "unload" for t in dep.targets)]
    assert unloads, "the app listens for visitors leaving"
    for dep in unloads:
        dep.fn(SimpleNamespace(session_hash="visitor"))
    assert "visitor" not in holder.session_data


def test_the_house_trims_malloc_once_the_last_run_ends(monkeypatch):
    from engine.host import memory
    from engine.host.house import House
    from tests.waits import wait_until
    if memory.LIBC is None:
        pytest.skip("this libc has no malloc_trim")
    monkeypatch.delenv("TBT_MALLOC_TRIM", raising=False)
    house, before = House(), memory.trims
    house.run_begins()
    house.run_begins()
    house.run_ends()
    assert memory.trims == before                   # a run still goes on: nothing trimmed under it
    house.run_ends()
    wait_until(lambda: memory.trims > before, 30, "a trim after the last run")
    monkeypatch.setenv("TBT_MALLOC_TRIM", "0")
    wait_until(lambda: memory._busy.acquire(blocking=False), 30, "the trim's thread done")
    memory._busy.release()
    done = memory.trims
    house.run_begins()
    house.run_ends()
    assert memory.trims == done and not memory.describe()["malloc_trim"]


ARENAS_PROBE = """
import ctypes, os, sys, tempfile, threading
sys.path.insert(0, {root!r})
from engine.host import memory
cap = memory.limit_arenas()
libc = memory.LIBC
libc.malloc.restype, libc.fopen.restype = ctypes.c_void_p, ctypes.c_void_p
libc.fopen.argtypes, libc.malloc_info.argtypes = [ctypes.c_char_p, ctypes.c_char_p], [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
both = threading.Barrier(9)
def allocate():                      # a thread's first malloc takes an arena of its own, under the cap
    libc.malloc(1000)
    both.wait()
    both.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads:
    t.start()
both.wait()
path = tempfile.mktemp()
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, fp)              # glibc's own account: one <heap nr=...> per arena
libc.fclose(fp)
both.wait()
print(cap, open(path).read().count("<heap nr="), memory.describe()["malloc_arenas"])
"""


@pytest.mark.parametrize("env, cap", [({"TBT_MALLOC_ARENAS": "2"}, 2), ({}, 2), ({"TBT_MALLOC_ARENAS": "0"}, None),
                                      ({"MALLOC_ARENA_MAX": "3", "TBT_MALLOC_ARENAS": "2"}, 3)])
def test_the_arena_cap_holds_for_the_threads_started_after_it(env, cap):
    from engine.host import memory
    if memory.LIBC is None:
        pytest.skip("not glibc")
    base = {k: v for k, v in os.environ.items() if k not in ("TBT_MALLOC_ARENAS", "MALLOC_ARENA_MAX")}
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", ARENAS_PROBE.format(root=root)], env={**base, **env},
                         capture_output=True, text=True, timeout=60, check=True).stdout.split()
    set_cap, heaps, shown = int(out[0]) if out[0] != "None" else None, int(out[1]), out[2]
    assert set_cap == cap and shown == str(cap)
    if cap is None:
        assert heaps > 3                 # glibc's own (8 a core): the main arena and most of the 8 threads'
    else:
        assert heaps == cap
