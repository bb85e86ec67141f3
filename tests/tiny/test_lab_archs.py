"""The lab's quick experiments on the tiny architectures (engine/lab): the ones that keep a cache across
passes (verify: k new tokens on the prompt's cache; kv_cache; speculative: prompt lookup rolls rejected
tokens back) run on every architecture, sliding-window caches included, which cannot be cropped. The
rest (weights, roofline, batching, attention) is the same code on any model; the closing note has the
full quick lab measured on each architecture."""

import pytest

from engine.lab import run_lab
from tests.tiny.models import ARCHS, SLIDING_ARCHS


@pytest.mark.parametrize("arch", ARCHS)
def test_verify_and_the_cache_run_on_every_architecture(arch, tiny_engine):
    result = run_lab(tiny_engine(arch), quick=True, only=["verify", "kv_cache"])
    assert not result["partial"]
    rows = result["verify"]["rows"]
    assert [r["k"] for r in rows] and all(r["ms_per_token"] > 0 for r in rows)
    assert result["kv_cache"]["speedup"] is not None
    # the kernel each arm names is the one that ran (Gemma 2 cannot run SDPA: its own eager instead)
    assert result["verify"]["attn_implementation"] == ("eager" if arch == "gemma2" else "sdpa")


@pytest.mark.parametrize("arch", SLIDING_ARCHS)
def test_speculative_decoding_runs_past_a_sliding_window(arch, tiny_engine):
    result = run_lab(tiny_engine(arch), quick=True, only=["speculative"])
    assert not result["partial"]
    assert result["speculative"]


def test_a_stop_ends_a_timed_run_between_its_tokens(tiny_engine, monkeypatch):
    """A Stop during one of the KV experiment's runs ends it before its next pass (a run without the
    cache took over 20 s on a loaded box, and Stop used to wait for its end): the runs finished before
    are kept, the one cut short is not, and the result says it is partial."""
    import threading

    from engine.lab import kv_cache, measure
    engine, cancel, passes = tiny_engine("llama"), threading.Event(), []
    real = measure.timed_ms
    cut = 2 * 2 + 8 + 1       # two warm-ups of two passes, the first run with the cache (8), one pass without

    def counted(fn, device):
        passes.append(1)
        if len(passes) == cut:
            cancel.set()
        return real(fn, device)
    monkeypatch.setattr(measure, "timed_ms", counted)
    result = kv_cache.run(engine, quick=True, cancel=cancel)
    assert result["partial"] and len(passes) == cut
    assert result["runs"]["cache_on"]["tokens"] and "cache_off" not in result["runs"]
