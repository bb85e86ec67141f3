"""5 · Speed: TTFT, TPOT and the rest as cards with their definitions, the run's timeline and each
step's time, where the time went op by op (ui/chapters/profile.py), TTFT against prompt length
(measured on request), and for a served model, how it holds up under concurrent streams."""

from __future__ import annotations

from dataclasses import replace

import gradio as gr

from engine.bench.sweep import LENGTHS, ttft_sweep
from engine.errors import EngineError
from engine.run.request import APP_DEFAULTS
from engine.served.load import load_sweep
from engine.schema.trace import Branch, Trace
from viz import html
from viz.charts import served_load, speed
from viz.html.branch_cards import branch_speed_html
from viz.text.labels import label

from ui.chapters.common import ENGINE, PRIVATE, chart_or_notice, intro, plot
from ui.chapters.profile import ProfilePanel
from ui.host.errors import refused, say
from ui.host.gpu import on_gpu
from ui.host.lab_mode import allow_served
from ui.host.models import torch_side
from ui.page.i18n import t
from ui.page.plot import Plot

SWEEP_TEXT = "Hello, world! " * 4          # the TTFT sweep's text when the prompt box is empty
LOAD_TEXT = "Explain in two sentences why the sky is blue."      # the load sweep's, likewise


def speed_view(trace: Trace, lang: str, branch: Branch | None = None) -> tuple:
    """(speed cards, timeline, step times); `branch`: the branch on show, whose own figures and own clock
    the cards and charts give (the parent's steps before the fork are on the parent's clock)."""
    cards = html.speed_html(trace, lang=lang) if branch is None else branch_speed_html(trace, branch, lang)
    return (cards, chart_or_notice(speed.timeline_chart, trace, lang=lang, branch=branch),
            chart_or_notice(speed.step_times_chart, trace, lang=lang, branch=branch))


class Speed:
    def __init__(self, run, lang: gr.State):
        self.run = run
        intro(4)
        self.cards = gr.HTML(elem_id="speed-cards")
        self.timeline, self.step_times = plot("timeline"), plot("step-times")
        self.profile = ProfilePanel(run.models, run.trace_file, lang)    # where the time went (after the run)
        self.sweep_btn = gr.Button(t("sweep"), elem_id="sweep")
        self.sweep_plot = Plot(show_label=False, elem_id="sweep-plot", visible=False)  # until measured
        # a served model under 1-8 concurrent streams (only where the host lists endpoints)
        self.load_btn = gr.Button(t("load_sweep"), elem_id="load-sweep", visible=bool(run.endpoints))
        self.load_plot = Plot(show_label=False, elem_id="load-plot", visible=False)
        self.load_table = gr.Dataframe(interactive=False, elem_id="load-table", visible=False, wrap=True)

    @property
    def views(self) -> list:
        return [self.cards, self.timeline, self.step_times]

    @staticmethod
    def draw(trace: Trace, lang: str, branch: Branch | None = None) -> list:
        return list(speed_view(trace, lang, branch))

    def sweep(self, prompt, model_id, lang, progress=gr.Progress()):
        """TTFT against prompt length: the prompt repeated to each length, one prefill each."""
        text = prompt if isinstance(prompt, str) and prompt.strip() else SWEEP_TEXT
        try:
            rows = ttft_sweep(self.run.models.get(model_id, lang), text, LENGTHS,
                              progress=lambda f, d: progress(f, desc=d))
        except EngineError as exc:
            raise refused(exc, lang) from None
        return gr.Plot(speed.ttft_vs_length_chart(rows, lang=lang), visible=True)

    def load_sweep(self, source, prompt, chat_template, lang, progress=gr.Progress()):
        """The chosen served model under 1, 2, 4 and 8 concurrent streams (bounded: engine/served/load.py's
        one wave per level and time budget; one sweep at a time on the page). Each request sends
        what a run of the same prompt sends: the chat template applied as `stream_served` applies
        it (client.sent_text), so a prompt that runs also sweeps."""
        allow_served(lang)                 # the host's TBT_LAB: a crafted call too
        endpoint = self.run.endpoint(source, lang)
        if endpoint is None:
            raise gr.Error(label("load_pick_served", lang), title=say("error_title", lang))
        text = prompt if isinstance(prompt, str) and prompt.strip() else LOAD_TEXT
        try:
            local = self.run.served_tokenizer(endpoint, lang)
            sent = torch_side("engine.served.client").sent_text(
                endpoint, text, replace(APP_DEFAULTS, chat_template=bool(chat_template)), local)
            result = load_sweep(endpoint, sent, progress=lambda f, d: progress(f, desc=d))   # the host's SLO
            return (gr.Plot(served_load.load_chart(result, lang=lang), visible=True),
                    gr.Dataframe(served_load.load_table(result, lang=lang), visible=True))
        except EngineError as exc:
            raise refused(exc, lang) from None
        except ValueError as exc:          # the sweep's own refusal of its arguments
            raise gr.Error(str(exc)) from None

    def wire(self, prompt, model_id, source, template_on, lang) -> None:
        self.load_btn.click(self.load_sweep, [source, prompt, template_on, lang], [self.load_plot, self.load_table],
                            concurrency_limit=1, concurrency_id="served-load", **PRIVATE)
        self.sweep_btn.click(on_gpu(self.sweep, 120), [prompt, model_id, lang], self.sweep_plot, **ENGINE, **PRIVATE)
