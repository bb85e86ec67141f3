"""Memory over many runs: 20 sequential runs on the shared engine (attention capture on every other
one, some cancelled mid-run, some rejected) leave the process's resident memory within 20 MB of
where it started, and trace files kept for download are evicted beyond their cap. A short bounded
version: the 1,000-run curve through the app as shipped is scripts/soak.py (`make soak`)."""

import gc
import threading
from pathlib import Path

import pytest

from engine import InvalidRequest, Settings, run_trace, stream_trace
from ui.host.runs import StopFlags, TraceFiles

STATUS = Path("/proc/self/status")
WARM_UP, RUNS, GROWTH_MB = 4, 20, 20      # 1 MB a run, as the 50-run version held (50 MB)
PROMPTS = ["Hello, world!", "什么是量子计算", "Write a haiku about rain.", "List three fruits.",
           "👩‍👩‍👧‍👦 <script>x</script>", "Explain in two sentences why the sky is blue."]


def rss_mb() -> float:
    for line in STATUS.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def one_run(engine, i: int) -> None:
    prompt = PROMPTS[i % len(PROMPTS)]
    settings = Settings(max_new_tokens=16, attention=i % 2 == 0, logit_lens=i % 4 == 0, seed=i,
                        temperature=0.0 if i % 3 else 0.8, top_k=0 if i % 3 else 40)
    if i % 10 == 7:                                     # a visitor presses Stop after 3 steps
        cancel = threading.Event()
        run = stream_trace(engine, prompt, settings, cancel)
        for n, _ in enumerate(run):
            if n == 4:
                cancel.set()
        return
    if i % 10 == 9:                                     # a rejected request leaves nothing behind
        with pytest.raises(InvalidRequest):
            stream_trace(engine, " ", settings)
    trace = run_trace(engine, prompt, settings)
    assert trace.summary.new_tokens >= 1


@pytest.mark.slow
@pytest.mark.skipif(not STATUS.exists(), reason="reads /proc/self/status (Linux)")
def test_twenty_runs_leave_memory_flat(engine, output_dir):
    for i in range(WARM_UP):                            # warm-up: kernels, caches, allocator pools
        one_run(engine, i)
    gc.collect()
    before = rss_mb()
    for i in range(RUNS):                               # every kind of run (i % 10 == 7, 9) twice
        one_run(engine, i)
    gc.collect()
    after = rss_mb()
    (output_dir / "soak.txt").write_text(f"RSS before {before:.1f} MB, after {RUNS} runs {after:.1f} MB\n")
    assert after - before < GROWTH_MB, \
        f"RSS grew {after - before:.1f} MB over {RUNS} runs ({before:.0f} -> {after:.0f} MB)"
    assert engine.active_runs == 0


def test_trace_files_are_evicted_beyond_their_cap(engine):
    files = TraceFiles(keep=3)
    trace = run_trace(engine, "Hi", Settings(max_new_tokens=2))
    paths = [files.write(trace) for _ in range(6)]
    kept = sorted(p.name for p in files.folder.iterdir())
    assert len(kept) == 3 and set(kept) <= {Path(p).name for p in paths}


def test_stop_flags_do_not_pile_up():
    flags = StopFlags()
    for i in range(100):
        flag = flags.start(f"session-{i % 7}")
        flags.end(f"session-{i % 7}", flag)
    assert len(flags) == 0
