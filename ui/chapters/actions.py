"""What the page's buttons do: run (streaming), stop, load a trace, the TTFT sweep.

Module-level objects are shared by every visitor; everything about one run lives in its own
generator and in the visitor's gr.State, so visitors never see each other's tokens or charts.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

import gradio as gr

from engine import environment
from engine.errors import EngineError
from engine.host.house import HOUSE
from engine.served import Endpoint
from engine.served.load import Slo, load_sweep
from engine.schema.specs import EMBEDDED
from engine.bench.sweep import LENGTHS, ttft_sweep
from engine.run.request import APP_DEFAULTS, check_settings, clean_prompt, number
from engine.schema.trace import Settings, Trace
from viz import html
from viz.charts import served_load, speed
from viz.fmt import fmt_rate
from viz.text.labels import label
from viz.html.chips import stop_words
from viz.charts.notice import embedding_strip, notice_chart

from ui.host.errors import message, refuse, refused, say
from ui.page.i18n import STRINGS, text
from ui.chapters.lab import HEADINGS
from ui.host.models import Models, first_model_loaded, torch_side
from ui.host.runs import STREAM_INTERVAL_S, StopFlags, TraceFiles
from ui.host.uploads import read_upload
from ui.chapters.views import clamp

if TYPE_CHECKING:
    from engine.model.core import Engine

# The engine's torch side (runs, tokenizers, embeddings) is imported where it is used: the page is
# built and served before torch loads (app.py).

def _setting(name: str, value, integer: bool = False) -> int | float:
    """A number control's value; an empty box (None, "") means the page's default (APP_DEFAULTS)."""
    if value is None or value == "":
        return getattr(APP_DEFAULTS, name)
    return number(name, value, integer=integer)


def make_settings(max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
                  chat_template) -> Settings:
    """Settings from the page's controls (sliders send floats, an empty number box sends None).
    Raises InvalidRequest for a value that is not a number; check_settings checks the ranges."""
    return replace(APP_DEFAULTS, max_new_tokens=_setting("max_new_tokens", max_new_tokens, integer=True),
                   temperature=_setting("temperature", temperature), top_k=_setting("top_k", top_k, integer=True),
                   top_p=_setting("top_p", top_p), seed=_setting("seed", seed, integer=True),
                   attention=bool(attention), logit_lens=bool(logit_lens), chat_template=bool(chat_template))


def status_md(trace: Trace, lang: str) -> str:
    parts = []
    colon, comma = ("：", "，") if lang == "zh" else (": ", ", ")     # the page's own punctuation
    if trace.prefill:
        parts.append(f"{label('prefill', lang)}{colon}{trace.prefill.tokens} {label('count_tokens', lang)}{comma}"
                     f"{trace.prefill.ms:.0f} ms")
    if trace.steps:
        parts.append(f"{label('lab_decode_step', lang)} {len(trace.steps)}/{trace.settings.max_new_tokens}")
        parts.append(f"TTFT {trace.steps[0].t_ms:.0f} ms")
    s = trace.summary
    if s:
        if s.tpot_ms:
            parts.append(f"TPOT {s.tpot_ms:.1f} ms")
        parts.append(fmt_rate(s.tokens_per_s, lang))           # as the speed cards write it
        parts.append(f"{label('stop_reason', lang)}{colon}**{stop_words(s.stop_reason, lang)}**")
    if trace.served:
        parts.append(label("served_status", lang, endpoint=trace.served.endpoint))
    elif trace.observation and trace.steps:
        o = trace.observation        # which path ran the decode steps (engine/compiled/fast.py)
        parts.append(label("decode_compiled", lang, slots=o.static_cache_tokens) if o.decode == "compiled"
                     else label("decode_eager", lang))
        if o.beside_compile:
            parts.append(label("verdict_beside_compile", lang))     # a hedge: no figure says how much slower
    return " · ".join(parts)


def waiting_md(engine: Engine, lang: str) -> str | None:
    """Why a run is about to wait: the lab holds the engine while it times (engine.held_for names
    the experiment), and the run's first forward pass waits for it. None when nothing holds it."""
    reason = getattr(engine, "held_for", None)
    if not reason:
        return None
    what = label(HEADINGS[reason], lang) if reason in HEADINGS else reason
    return text("waiting_lab", lang).format(reason=what)


def house_md(lang: str) -> str | None:
    """What heavy work the house runs beside this visitor's run (engine/host/house.py), and that it
    stands still meanwhile. None when there is none."""
    jobs = HOUSE.describe()["jobs"]
    if not jobs:
        return None
    names = []
    for job in jobs:
        key = f"house_{job['kind']}"
        names.append(text(key, lang).format(name=job["what"].replace("_", " ")) if key in STRINGS else job["what"])
    return text("house_busy", lang).format(what=", ".join(dict.fromkeys(names)))


class Actions:
    def __init__(self, models: Models, endpoints: list[Endpoint] | None = None):
        self.models = models
        self.endpoints = {e.name: e for e in endpoints or []}     # the host's served models (TBT_ENDPOINTS)
        self.flags = StopFlags()
        self.files = TraceFiles()

    @property
    def engine(self) -> Engine:
        """The host's default model."""
        return self.models.engine

    def engine_of(self, trace: Trace) -> Engine | None:
        """The loaded engine a trace was recorded with, if this page has it."""
        first_model_loaded()         # during start-up the table is empty until then
        return self.models.engines.get(trace.model.id)

    # --- run ----------------------------------------------------------------------------------
    def check_run(self, prompt, max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
                  chat_template, model_id, source, lang) -> str | None:
        """Why the run cannot start, in the page's language, or None: an empty or oversized prompt,
        or a bad setting, is said under the prompt box before anything runs (explore.py), so no
        output (the previous answer) is painted as failed. Checks that need the model's tokenizer
        (the prompt's length in tokens) stay in the run."""
        try:
            check_settings(make_settings(max_new_tokens, temperature, top_k, top_p, seed, attention,
                                         logit_lens, chat_template), self.models.limits)
            clean_prompt(prompt, self.models.limits)
        except EngineError as exc:
            return message(exc, lang)
        return None

    def run(self, prompt, max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
            chat_template, model_id, source, lang, request: gr.Request):
        """Stream one run, on this page's model or on a served one (`source`, an endpoint's name):
        (trace state, output chips, status, prompt chips, stale-chapters banner) after every event."""
        try:
            settings = make_settings(max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
                                     chat_template)
        except EngineError as exc:
            raise refused(exc, lang) from None
        endpoint = self.endpoint(source, lang)
        local = self.served_tokenizer(endpoint, lang) if endpoint is not None else None
        engine = local if local is not None else self.models.get(model_id, lang)
        with self.flags.running(request) as flag:
            try:
                if endpoint is not None:      # the server's model; ours only maps its tokens (if named)
                    plain = replace(settings, attention=False, logit_lens=False)
                    events = torch_side("engine.served.client").stream_served(endpoint, prompt, plain, local=local,
                                                                              cancel=flag)
                else:
                    events = torch_side("engine.run.generate").stream_trace(engine, prompt, settings, cancel=flag,
                                                                        keep_cache=True)   # forks reuse it
            except EngineError as exc:
                raise refused(exc, lang) from None
            shown = 0.0
            try:
                for event in events:
                    trace, now = event.trace, time.monotonic()
                    if event.kind == "step" and now - shown < STREAM_INTERVAL_S:
                        continue          # the page needs ~10 updates a second, not one per token
                    shown = now
                    starting = event.kind == "tokens"   # the prompt is tokenized, no pass run yet
                    status = status_md(trace, lang)
                    if starting and endpoint is None:    # the next step is the first forward pass: say if it waits
                        status = waiting_md(engine, lang) or status
                    beside = house_md(lang)              # heavy work standing still for this run
                    if beside:
                        status = f"{status}  \n{beside}"
                    yield (trace if event.kind == "done" else gr.skip(), html.output_html(trace, lang=lang),
                           status, html.prompt_html(trace, lang=lang) if starting else gr.skip(),
                           # the chapters still show the previous run until this one ends and redraws them
                           gr.update(visible=True, value=text("chapters_previous", lang)) if starting else gr.skip())
            except EngineError as exc:          # e.g. a server failed mid-stream: its sentence, not a trace
                raise refused(exc, lang) from None
            finally:
                events.close()

    def endpoint(self, source: str | None, lang: str = "en") -> Endpoint | None:
        """The host's endpoint named `source` ("" or None: this page's model)."""
        if not source:
            return None
        if source not in self.endpoints:
            raise refuse("served_not_offered", lang, source=repr(source)[:80])
        return self.endpoints[source]

    def stop(self, request: gr.Request):
        self.flags.stop_tab(request)

    def load_sweep(self, source, prompt, chat_template, lang, progress=gr.Progress()):
        """The chosen served model under 1, 2, 4 and 8 concurrent streams (bounded: one wave per
        level, 32 tokens each, a 90 s budget; one sweep at a time on the page). Each request sends
        what a run of the same prompt sends: the chat template applied as `stream_served` applies
        it (client.sent_text), so a prompt that runs also sweeps."""
        endpoint = self.endpoint(source, lang)
        if endpoint is None:
            raise gr.Error(label("load_pick_served", lang), title=say("error_title", lang))
        text = prompt if isinstance(prompt, str) and prompt.strip() else "Explain in two sentences why the sky is blue."
        try:
            local = self.served_tokenizer(endpoint, lang)
            sent = torch_side("engine.served.client").sent_text(
                endpoint, text, replace(APP_DEFAULTS, chat_template=bool(chat_template)), local)
            result = load_sweep(endpoint, sent, max_tokens=32, rounds=1, slo=Slo(*environment.slo_ms()),
                                budget_s=90, progress=lambda f, d: progress(f, desc=d))
            return (gr.Plot(served_load.load_chart(result, lang=lang), visible=True),
                    gr.Dataframe(served_load.load_table(result, lang=lang), visible=True))
        except EngineError as exc:
            raise refused(exc, lang) from None
        except ValueError as exc:          # the sweep's own refusal of its arguments
            raise gr.Error(str(exc)) from None

    def served_tokenizer(self, endpoint: Endpoint, lang: str = "en") -> Engine | None:
        """The loaded model the host names as `endpoint`'s tokenizer (its chat template, its token
        ids), or None when it names none."""
        if not endpoint.tokenizer:
            return None
        return self.models.get(EMBEDDED if endpoint.tokenizer == "embedded" else endpoint.tokenizer, lang)

    def trace_file(self, trace: Trace | None, lens: bool = True):
        """The trace as a file to download: with the logit lens computed for every step from the
        states the run kept (engine/model/lens.py), so an uploaded copy shows it without a model
        (`lens` False: as it is, states and all; ~20 ms a step less)."""
        if trace is None:
            return None
        engine = self.engine_of(trace) if lens else None
        return self.files.write(torch_side("engine.model.lens").exported(engine, trace) if engine else trace)

    def with_lens(self, trace: Trace | None, step) -> Trace | None:
        """`trace` with the lens of the step on show computed from its kept states (~25 ms here)."""
        engine = self.engine_of(trace) if trace is not None and trace.steps else None
        if engine is None or trace.model.source == "served":
            return trace
        return torch_side("engine.model.lens").with_step_lens(engine, trace, clamp(step, len(trace.steps) - 1))

    # --- tokens chapter helpers (need the tokenizer) ------------------------------------------
    def comparison(self, trace: Trace) -> tuple:
        engine = self.engine_of(trace) or self.engine
        other, tokens = torch_side("engine.model.other_tokenizer"), torch_side("engine.model.tokens")
        raw = trace.prompt.raw
        ours = tokens.prompt_tokens(engine.token_bytes, raw, engine.encode(raw, templated=True))
        return ours, engine.info.id.split(":")[-1], other.qwen_tokens(raw), other.NAME

    def embedding(self, trace: Trace | None, index, lang: str):
        if trace is None or not trace.prompt.tokens:
            return notice_chart(label("run_first", lang)), ""
        engine = self.engine_of(trace)
        if engine is None:
            return notice_chart(label("other_model", lang)), ""
        token = trace.prompt.tokens[clamp(index, len(trace.prompt.tokens) - 1)]
        vector, neighbors = torch_side("engine.model.embeddings").embedding_neighbors(engine, token.id)
        title = f"{label('embedding_of', lang)} {token.text!r} ({label('embedding_dims', lang, id=token.id, n=len(vector))})"
        return (embedding_strip(vector, title),
                html.neighbors_html({"id": token.id, "text": token.text}, neighbors, lang=lang))

    # --- load / sweep ---------------------------------------------------------------------------
    def load(self, path: str | None, lang: str = "en") -> Trace:
        """A visitor's trace file, read as data only; every failure says (in `lang`) what is wrong with it."""
        return read_upload(path, self.models.limits, lang)

    def sweep(self, prompt, model_id, lang, progress=gr.Progress()):
        text = prompt if isinstance(prompt, str) and prompt.strip() else "Hello, world! " * 4
        try:
            rows = ttft_sweep(self.models.get(model_id, lang), text, LENGTHS,
                              progress=lambda f, d: progress(f, desc=d))
        except EngineError as exc:
            raise refused(exc, lang) from None
        return gr.Plot(speed.ttft_vs_length_chart(rows, lang=lang), visible=True)
