"""The documented API, declared with `gr.api`: typed functions whose signatures are the endpoints.

    /trace       a prompt (and settings) in, the Trace JSON file out
    /compare     one question in normal and reasoning mode, both Trace files out
    /fork        a trace file, a step and a token in: the trace with a new branch out, continued
                 from that step with that token on the run's cached prefix
    /read_trace  a trace file in, a one-line summary out (read as the page's upload reads it)
    /status      runs in progress, the models offered, the caps

Every setting defaults to the engine's own default (`Settings()`), so
`client.predict(prompt="...", api_name="/trace")` is enough. `model` picks one of the host's
allowed models ("" is the host's default). Arguments arrive as the caller sent them (gr.api does
no conversion), so each is checked here and a wrong one is answered with a message that names it.
A caller that sends `Accept-Language: zh` (gradio_client: `Client(url, headers={"Accept-Language":
"zh"})`) is answered in Chinese (assets/strings/errors.json, through ui/errors.py); English otherwise.
A header, not an argument: the endpoints' positional arguments stay as callers know them.

/trace and /compare are generators that yield after every step: when the caller disconnects or
cancels, Gradio closes the generator at its next yield and the run stops there. One client (its
session, and its address where the host's proxy forwards one) holds at most one run at a time.
"""

import dataclasses
from collections.abc import Iterator

import gradio as gr
from gradio import FileData

from engine import EngineError
from engine.host.house import HOUSE
from engine.run.request import flag, number
from engine.run.side_by_side import interleave
from engine.schema.trace import Settings, Trace

from ui.charts_out import ChartsApi
from ui.errors import refuse, refused
from ui.gpu import for_tokens, on_gpu
from ui.i18n import lang_of
from ui.models import Models, torch_side
from ui.profile_panel import measure_profile
from ui.runs import API_SLOTS, BUSY, ENGINE_CONCURRENCY, RunRefused, TraceFiles
from ui.uploads import read_upload

D = Settings()
ENGINE = {"concurrency_limit": ENGINE_CONCURRENCY, "concurrency_id": "engine"}


def text_arg(name: str, value, lang: str) -> str:
    if not isinstance(value, str):
        raise refuse("not_text", lang, name=name, got=type(value).__name__)
    return value


def flag_arg(name: str, value, lang: str) -> bool:
    try:
        return flag(name, value)
    except EngineError as exc:
        raise refused(exc, lang) from None


def number_arg(name: str, value, lang: str, whole: bool = False) -> float | int:
    """A JSON number (not true/false, not NaN or infinity); `whole` ones may be sent as 48.0.
    The engine checks the range (engine/run/request.py `number`, the one number check)."""
    try:
        return number(name, value, integer=whole)
    except EngineError as exc:
        raise refused(exc, lang) from None


def lang_of_caller(request: gr.Request | None) -> str:
    """The language a caller asked for in its Accept-Language header ("en" without one)."""
    return lang_of((request.headers or {}).get("accept-language") if request is not None else None)


def file_path(file) -> str | None:
    """The server path of an uploaded file, sent as a FileData or its dict form."""
    return file.get("path") if isinstance(file, dict) else getattr(file, "path", None)


def as_file(path: str) -> dict:
    """A FileData as a dict: Gradio finds files to serve inside lists only in this form."""
    return FileData(path=path, orig_name=path.rsplit("/", 1)[-1], mime_type="application/json").model_dump()


class Api:
    def __init__(self, models: Models):
        self.models = models
        self.files = TraceFiles()

    def engine(self, model: str, lang: str = "en"):
        return self.models.get(text_arg("model", model, lang) or None, lang)

    def trace(self, prompt: str, max_new_tokens: int = D.max_new_tokens, temperature: float = D.temperature,
              top_k: int = D.top_k, top_p: float = D.top_p, seed: int = D.seed, attention: bool = D.attention,
              logit_lens: bool = D.logit_lens, chat_template: bool = D.chat_template, model: str = "",
              request: gr.Request = None) -> Iterator[FileData | None]:
        """Run one prompt to the end and return its Trace as a JSON file (read it with
        engine.Trace.from_json). Yields nothing (None) after each step until the last."""
        lang = lang_of_caller(request)
        settings = Settings(
            max_new_tokens=number_arg("max_new_tokens", max_new_tokens, lang, whole=True),
            temperature=number_arg("temperature", temperature, lang),
            top_k=number_arg("top_k", top_k, lang, whole=True), top_p=number_arg("top_p", top_p, lang),
            seed=number_arg("seed", seed, lang, whole=True), attention=flag_arg("attention", attention, lang),
            logit_lens=flag_arg("logit_lens", logit_lens, lang),
            chat_template=flag_arg("chat_template", chat_template, lang))
        prompt = text_arg("prompt", prompt, lang)
        try:
            with API_SLOTS.hold(request, BUSY):
                # the run's cache stays on the server (bounded), so /fork of this trace reuses it
                events = torch_side("engine.run.generate").stream_trace(self.engine(model, lang), prompt, settings,
                                                                        keep_cache=True)
                try:
                    for event in events:
                        trace = event.trace
                        if event.kind != "done":
                            yield None
                finally:
                    events.close()
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        # the file carries the logit lens, computed now from the states the run kept (engine/model/lens.py)
        yield as_file(self.files.write(torch_side("engine.model.lens").exported(self.engine(model, lang), trace)))

    def fork(self, trace: FileData, step: int, token: int, parent: str = "",
             max_new_tokens: int = D.max_new_tokens, recompute: bool = False, model: str = "",
             request: gr.Request = None) -> Iterator[FileData | None]:
        """Continue a trace (a /trace result, or a file) from `step` with `token`, one of that
        step's stored candidates, reusing the run's KV cache for the prefix (kept on the server
        for runs it made; otherwise built once). `parent` forks a branch instead of the run.
        Returns the trace with the new branch last in `branches`; `recompute` also times the
        same first token with the prefix recomputed from scratch (branch.recompute_ms)."""
        path, lang = file_path(trace), lang_of_caller(request)
        at, chosen = number_arg("step", step, lang, whole=True), number_arg("token", token, lang, whole=True)
        new = number_arg("max_new_tokens", max_new_tokens, lang, whole=True)
        parent, measure = text_arg("parent", parent, lang), flag_arg("recompute", recompute, lang)
        try:
            engine = self.engine(model, lang)
            source = read_upload(path, engine.limits, lang)
            with API_SLOTS.hold(request, BUSY):
                fork = torch_side("engine.run.fork")
                events = fork.stream_fork(engine, source, at, chosen, parent=parent, max_new_tokens=new)
                try:
                    while True:
                        next(events)
                        yield None
                except StopIteration as done:
                    forked = done.value
                finally:
                    events.close()
                if measure:
                    forked = fork.measure_recompute(engine, forked, forked.branches[-1].id)
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        yield as_file(self.files.write(forked))

    def compare(self, prompt: str, thinking_budget: int = 64, answer_tokens: int = 48, model: str = "",
                request: gr.Request = None) -> Iterator[list[FileData] | None]:
        """One question in normal and reasoning mode, the two runs taking turns; returns
        [normal, reasoning] Trace JSON files. Each trace's times are its own mode's."""
        lang = lang_of_caller(request)
        prompt = text_arg("prompt", prompt, lang)
        budget = number_arg("thinking_budget", thinking_budget, lang, whole=True)
        answer = number_arg("answer_tokens", answer_tokens, lang, whole=True)
        for name, value, least in (("thinking_budget", budget, 0), ("answer_tokens", answer, 1)):
            if value < least:
                raise refuse("at_least", lang, name=name, lo=least, got=repr(value))
        try:
            with API_SLOTS.hold(request, BUSY):
                for normal, reasoning, finished in interleave(self.engine(model, lang), prompt, budget, answer):
                    if not finished:
                        yield None
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None
        yield [as_file(self.files.write(normal)), as_file(self.files.write(reasoning))]

    def profile(self, trace: FileData, step: int = 0, model: str = "", request: gr.Request = None) -> dict:
        """Where a run's time went (a /trace result, or a file of this model): its prefill and decode
        step `step` (0: the run's middle) replayed with timers on each op, beside the roofline's time
        for each op on this machine, and projected onto larger GPUs and models (ui/profile_panel.py)."""
        lang = lang_of_caller(request)
        at = number_arg("step", step, lang, whole=True)
        try:
            engine = self.engine(model, lang)
            source = read_upload(file_path(trace), engine.limits, lang)
            with API_SLOTS.hold(request, BUSY):
                return measure_profile(engine, source, at or None)
        except (EngineError, RunRefused) as exc:
            raise refused(exc, lang) from None

    def read_trace(self, file: FileData, request: gr.Request = None) -> str:
        """Read a trace JSON file exactly as the page's upload does; returns what it holds, in one line."""
        path = file_path(file)
        trace: Trace = read_upload(path, self.models.limits, lang_of_caller(request))
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
                "limits": dataclasses.asdict(engine.limits)}

    def declare(self) -> None:
        """The endpoints, inside the page's gr.Blocks."""
        gr.api(on_gpu(self.trace, for_tokens(1)), api_name="trace", **ENGINE)
        gr.api(on_gpu(self.compare, for_tokens((1, 2))), api_name="compare", **ENGINE)
        gr.api(on_gpu(self.fork, for_tokens(4)), api_name="fork", **ENGINE)
        gr.api(on_gpu(self.profile, 60), api_name="profile", **ENGINE)
        gr.api(self.read_trace, api_name="read_trace")
        gr.api(ChartsApi(self.models).export, api_name="export", concurrency_limit=2, concurrency_id="charts-out")
        gr.api(self.status, api_name="status", queue=False)
