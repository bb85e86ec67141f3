"""What Run and Stop do: one run streamed into the page, on this page's model or on a served one.

Module-level objects are shared by every visitor; everything about one run lives in its own
generator and in the visitor's gr.State, so visitors never see each other's tokens or charts.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

import gradio as gr

from engine.errors import EngineError
from engine.host.house import HOUSE
from engine.run.request import APP_DEFAULTS, check_settings, clean_prompt
from engine.schema.specs import EMBEDDED
from engine.schema.trace import Branch, Settings, Trace
from engine.served import Endpoint
from viz import html
from viz.fmt import fmt_rate
from viz.html.chips import stop_words
from viz.text.labels import label

from ui.chapters.lab import heading_of
from ui.host.errors import message, refuse, refused
from ui.host.models import Models, torch_side
from ui.host.runs import STREAM_INTERVAL_S, StopFlags, TraceFiles
from ui.page.i18n import STRINGS, text

if TYPE_CHECKING:
    from engine.model.core import Engine


def _setting(name: str, value):
    """A number control's value; an empty box (None, "") means the page's default (APP_DEFAULTS)."""
    return getattr(APP_DEFAULTS, name) if value is None or value == "" else value


def make_settings(max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
                  chat_template) -> Settings:
    """Settings from the page's controls as they came (sliders send floats, an empty number box sends
    None): check_settings (the protocol's RunSettings) checks their kinds and ranges."""
    return replace(APP_DEFAULTS, max_new_tokens=_setting("max_new_tokens", max_new_tokens),
                   temperature=_setting("temperature", temperature), top_k=_setting("top_k", top_k),
                   top_p=_setting("top_p", top_p), seed=_setting("seed", seed),
                   attention=bool(attention), logit_lens=bool(logit_lens), chat_template=bool(chat_template))


def _figures(trace: Trace, lang: str) -> list[str]:
    """The status line's figures: prefill, steps, TTFT, TPOT, speed, why it stopped."""
    colon, comma = ("：", "，") if lang == "zh" else (": ", ", ")     # the page's own punctuation
    parts = []
    if trace.prefill:
        parts.append(f"{label('prefill', lang)}{colon}{trace.prefill.tokens} {label('count_tokens', lang)}{comma}"
                     f"{trace.prefill.ms:.0f} ms")
    s = trace.summary
    if trace.steps:
        parts.append(f"{label('status_tokens', lang)} {len(trace.steps)}/{trace.settings.max_new_tokens}")
        parts.append(f"TTFT {(s.ttft_ms if s and s.ttft_ms is not None else trace.steps[0].t_ms):.0f} ms")
    if s:
        if s.tpot_ms:
            parts.append(f"TPOT {s.tpot_ms:.1f} ms")
        parts.append(fmt_rate(s.tokens_per_s, lang))           # as the speed cards write it
        parts.append(f"{label('stop_reason', lang)}{colon}**{stop_words(s.stop_reason, lang)}**")
    return parts


def status_md(trace: Trace, lang: str) -> str:
    """The line under the answer: the run's figures, and where its steps ran."""
    parts = _figures(trace, lang)
    if trace.served:
        parts.append(label("served_status", lang, endpoint=trace.served.endpoint))
    elif trace.observation and trace.steps:
        o = trace.observation        # which path ran the decode steps (engine/compiled/fast.py)
        parts.append(label("decode_compiled", lang, slots=o.static_cache_tokens) if o.decode == "compiled"
                     else label("decode_eager", lang))
        if o.beside_compile:
            parts.append(label("verdict_beside_compile", lang))     # a hedge: no figure says how much slower
    return " · ".join(parts)


def compiled_md(engine, lang: str) -> str | None:
    """Why runs decode eagerly when the engine's compiled step was built and does not pay on this
    machine (engine/compiled/verdict.py); None otherwise."""
    fast = getattr(engine, "fast", None)
    built = next(iter(fast.built.values()), {}) if fast is not None else {}
    if not built.get("why") or not built.get("same_tokens") or built.get("ratio") is None:
        return None
    return label("decode_eager_not_paying", lang, ratio=f"{built['ratio']:.2f}", pays=f"{built['pays_at']:g}")


def branch_status_md(trace: Trace, branch: Branch, lang: str) -> str:
    """The line under the answer while a branch is on show: the branch's own figures (its generated
    steps, its TTFT from the fork request, its speed), never the parent run's prefill or clock."""
    own = replace(trace, steps=list(branch.steps[1:]), summary=branch.summary, prefill=None, settings=branch.settings)
    head = label("branch_status", lang, id=branch.id, step=branch.at, n=f"{branch.reused_tokens:,}")
    return " · ".join([head, *_figures(own, lang), label("decode_eager", lang)])     # branches decode eager


def waiting_md(engine: Engine, lang: str) -> str | None:
    """Why a run is about to wait: the lab holds the engine while it times (engine.held_for names
    the experiment), and the run's first forward pass waits for it. None when nothing holds it."""
    reason = getattr(engine, "held_for", None)
    if not reason:
        return None
    return text("waiting_lab", lang).format(reason=heading_of(reason, lang))


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


class Run:
    """The page's runs: the models, the host's served models, a Stop flag per tab, the downloads."""

    def __init__(self, models: Models, endpoints: list[Endpoint] | None = None):
        self.models = models
        self.endpoints = {e.name: e for e in endpoints or []}     # the host's served models (TBT_ENDPOINTS)
        self.flags = StopFlags()
        self.files = TraceFiles()

    def check(self, prompt, max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
              chat_template, model_id, source, lang) -> str | None:
        """Why the run cannot start, in the page's language, or None: an empty or oversized prompt,
        or a bad setting, is said under the prompt box before anything runs, so no output (the
        previous answer) is painted as failed. Checks that need the model's tokenizer (the
        prompt's length in tokens) stay in the run."""
        try:
            check_settings(make_settings(max_new_tokens, temperature, top_k, top_p, seed, attention,
                                         logit_lens, chat_template), self.models.limits)
            clean_prompt(prompt, self.models.limits)
        except EngineError as exc:
            return message(exc, lang)
        return None

    def events(self, prompt, settings: Settings, model_id, source, lang, flag):
        """The run's events: on a served model (ours only maps its tokens, if the host names it as
        its tokenizer), or on this page's, keeping its cache for forks."""
        endpoint = self.endpoint(source, lang)
        local = self.served_tokenizer(endpoint, lang) if endpoint is not None else None
        if endpoint is not None:
            plain = replace(settings, attention=False, logit_lens=False)
            return None, torch_side("engine.served.client").stream_served(endpoint, prompt, plain, local=local,
                                                                          cancel=flag)
        engine = self.models.get(model_id, lang)
        return engine, torch_side("engine.run.generate").stream_trace(engine, prompt, settings, cancel=flag,
                                                                      keep_cache=True)

    def run(self, prompt, max_new_tokens, temperature, top_k, top_p, seed, attention, logit_lens,
            chat_template, model_id, source, lang, request: gr.Request):
        """Stream one run: (trace state, output chips, status, prompt chips, stale-chapters banner)."""
        try:
            settings = check_settings(make_settings(max_new_tokens, temperature, top_k, top_p, seed, attention,
                                                    logit_lens, chat_template), self.models.limits)
        except EngineError as exc:
            raise refused(exc, lang) from None
        with self.flags.running(request) as flag:
            try:
                engine, events = self.events(prompt, settings, model_id, source, lang, flag)
            except EngineError as exc:
                raise refused(exc, lang) from None
            try:
                yield from self.shown(events, engine, lang)
            except EngineError as exc:          # e.g. a server failed mid-stream: its sentence, not a trace
                raise refused(exc, lang) from None
            finally:
                events.close()

    @staticmethod
    def shown(events, engine, lang: str):
        """The page's updates for a run's events, ~10 a second (not one per token)."""
        shown = 0.0
        for event in events:
            trace, now = event.trace, time.monotonic()
            if event.kind == "step" and now - shown < STREAM_INTERVAL_S:
                continue
            shown = now
            starting = event.kind == "tokens"   # the prompt is tokenized, no pass run yet
            status = status_md(trace, lang)
            if starting and engine is not None:    # the next step is the first forward pass: say if it waits
                status = waiting_md(engine, lang) or status
            if event.kind == "done" and trace.observation and trace.observation.decode == "eager":
                status = "  \n".join(filter(None, (status, compiled_md(engine, lang))))
            beside = house_md(lang)              # heavy work standing still for this run
            if beside:
                status = f"{status}  \n{beside}"
            yield (trace if event.kind == "done" else gr.skip(), html.output_html(trace, lang=lang),
                   status, html.prompt_html(trace, lang=lang) if starting else gr.skip(),
                   # the chapters still show the previous run until this one ends and redraws them
                   gr.update(value=text("chapters_previous", lang), elem_classes=[]) if starting else gr.skip())

    def endpoint(self, source: str | None, lang: str = "en") -> Endpoint | None:
        """The host's endpoint named `source` ("" or None: this page's model)."""
        if not source:
            return None
        if source not in self.endpoints:
            raise refuse("served_not_offered", lang, source=repr(source)[:80])
        return self.endpoints[source]

    def stop(self, request: gr.Request):
        self.flags.stop_tab(request)

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
        engine = self.models.of_trace(trace) if lens else None
        return self.files.write(torch_side("engine.model.lens").exported(engine, trace) if engine else trace)
