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
