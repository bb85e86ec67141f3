"""/read_trace (a trace file in, what it holds in one line out) and /status (for health checks)."""

from __future__ import annotations

import dataclasses

import gradio as gr
from gradio import FileData
from gradio.context import Context

from engine import environment
from engine.host import memory
from engine.host.house import HOUSE
from engine.schema.trace import Trace

from ui.api.args import file_path, lang_of_caller
from ui.host import sessions
from ui.host.uploads import read_upload


def memory_now(models, demo=None) -> dict:
    """What the process holds now, beside the caps in "limits": its resident memory (with its
    children's), the bytes the kept prefix caches pin (what TBT_PREFIX_CACHE_MB bounds), the
    allocator trims after runs (engine/host/memory.py) and the visitors' sessions the page holds,
    leaving and dropped (ui/host/sessions.py)."""
    import psutil
    me = psutil.Process()
    rss = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            rss += child.memory_info().rss
        except psutil.Error:
            pass
    held = sum(e.prefixes.held() for e in list(models.engines.values()))
    return {"rss_mb": round(rss / 2**20, 1), "prefix_cache_bytes": held, **memory.describe(),
            **sessions.describe(demo)}


class StatusEndpoints:
    def __init__(self, models):
        self.models = models
        self.demo = None              # the page whose sessions /status counts (set in declare)

    def read_trace(self, file: FileData, request: gr.Request = None) -> str:
        """Read a trace JSON file exactly as the page's upload does; returns what it holds, in one line."""
        trace: Trace = read_upload(file_path(file), self.models.limits, lang_of_caller(request))
        s = trace.summary
        speed = (f"TTFT {s.ttft_ms:.0f} ms, TPOT {s.tpot_ms:.1f} ms, stop: {s.stop_reason}" if s else "unfinished")
        return (f"{trace.model.id} · {len(trace.prompt.tokens)} prompt tokens · {len(trace.steps)} new tokens · "
                f"{speed}")

    def status(self) -> dict:
        """For hosts' health checks and for tests: runs in progress, the models offered, the caps,
        and the page's notice if the host's default could not be loaded. (It answers once the
        default model is loaded: the page itself is up before.)"""
        models = self.models
        engine = models.engine
        return {"active_runs": sum(e.active_runs for e in list(models.engines.values())),
                "models": models.allowed, "default": models.default, "loaded": list(models.engines),
                "notice": models.notice(),
                # the compiled decode step of the default model: queued, building, ready, not used or failed
                "fast": engine.fast.describe() if engine.fast else None,
                # the house's heavy work now (compile, lab, evaluation, load sweep): each job stands
                # still while any visitor's run is in progress (engine/host/house.py)
                "house": HOUSE.describe(),
                "memory": memory_now(models, self.demo),
                "runs_at_once": environment.concurrency(),     # each holds at most its captures' caps
                "limits": dataclasses.asdict(engine.limits)}

    def declare(self) -> None:
        self.demo = Context.root_block            # declared inside the page's gr.Blocks
        gr.api(self.read_trace, api_name="read_trace")
        gr.api(self.status, api_name="status", queue=False)
