"""The Explore tab: one prompt, Run/Stop, the streaming answer, and a tab per chapter.

State: `trace` is what the chapters draw (the run, or one branch's view); `tree` is the run with
all its branches (what is downloaded); `branch` names the lineage on show. Every chapter module
lays itself out, draws its views from a trace (`draw`) and wires its own controls (`wire`); this
module composes them: one draw of every chapter after a run, an upload, a fork or a relabel.
"""

from __future__ import annotations

import re
from html import escape

import gradio as gr

from engine.run.request import APP_DEFAULTS
from engine.schema.branches import ROOT, find
from engine.schema.specs import short_name
from viz import html
from viz.fmt import device_name
from viz.html.tree import tree_html

from ui.chapters import floor, lab, reasoning
from ui.chapters.common import CLICK_JS, ENGINE, PRIVATE, intro, stop_button, stop_wiring, while_running
from ui.chapters.decode import Decode, least_sure_step
from ui.chapters.fork import ForkPanel
from ui.chapters.kv import KvCache
from ui.chapters.prefill import Prefill
from ui.chapters.run import Run, branch_status_md, status_md
from ui.chapters.sampling import Sampling, sampling_view
from ui.chapters.speed import Speed
from ui.chapters.tokens import Tokens
from ui.chapters.trace_file import TraceFile
from ui.host.gpu import for_tokens, on_gpu
from ui.host.recordings import examples, is_recording, recorded, recording_file
from ui.host.runs import closed_on_stop
from ui.page import HIDDEN
from ui.page.bar import explore_bar
from ui.page.i18n import t, text
from ui.page.same_draw import SameDraws


def recording_html(trace, lang: str) -> str:
    """The output area while the chapters show a recording: what it is, and how to run your own."""
    template = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escape(text("explore_recording", lang), quote=False))
    words = template.format(prompt=escape(trace.prompt.raw), date=escape(trace.created[:10]),
                            device=escape(device_name(trace.model.device)))
    return f'<div class="tbt-recording">{words}</div>'


SAME = SameDraws()      # the recording's chapters, per language and controls

# a click on an answer token brings the Decode chapter (now on that step) into sight
SHOW_DECODE_JS = "() => document.querySelector('#explore-chapters')?.scrollIntoView({block: 'start'})"

class Explore:
    def __init__(self, run: Run, model_id: gr.components.Component, lang: gr.State):
        self.run, self.lang, self.model_id = run, lang, model_id
        self.trace, self.tree, self.branch = gr.State(None), gr.State(None), gr.State(ROOT)
        with gr.Row():
            with gr.Column(scale=2):
                self.prompt_column()
            with gr.Column(scale=3):
                self.output = gr.HTML(elem_id="output", js_on_load=CLICK_JS)
                self.status = gr.Markdown(elem_id="status")
        self.stale = gr.Markdown(elem_id="stale", elem_classes=[HIDDEN])      # mounted, hidden (ui/page HIDDEN)
        self.share_bar = explore_bar()      # link to this view, charts out, slides (ui/share/links.py)
        self.chapters_tabs()
        self.wire()

    def prompt_column(self) -> None:
        """The prompt, its examples, where it runs, Run and Stop, and the generation settings."""
        self.prompt = gr.Textbox(label=t("prompt"), lines=3, max_lines=12, elem_id="prompt",
                                 info=self.prompt_info("en"))
        gr.Examples(examples=examples(), inputs=self.prompt, label=t("examples"))
        # the host's served models (TBT_ENDPOINTS), beside this page's own: a visitor picks, never types a URL
        self.source = gr.Dropdown(self.source_choices(), value="", label=t("run_on"), info=t("run_on_info"),
                                  visible=bool(self.run.endpoints), elem_id="run-on")
        with gr.Row():
            self.run_btn = gr.Button(t("run"), variant="primary", elem_id="run")
            self.stop_btn = stop_button(t("stop"), "stop")
        with gr.Accordion(t("settings"), open=False):
            self.settings = self.settings_controls(self.run.models.limits.max_new_tokens)

    @staticmethod
    def settings_controls(most_new: int) -> list:
        """The run's settings, at the page's defaults (APP_DEFAULTS)."""
        d = APP_DEFAULTS
        controls = [gr.Slider(1, most_new, value=d.max_new_tokens, step=1, label=t("max_new_tokens"), elem_id="max-new"),
                    gr.Slider(0, 2, value=d.temperature, step=0.05, label=t("temperature_greedy")),
                    gr.Slider(0, 200, value=d.top_k, step=1, label=t("top_k_off")),
                    gr.Slider(0.01, 1, value=d.top_p, step=0.01, label=t("top_p_off")),
                    gr.Number(value=d.seed, precision=0, label=t("seed"), minimum=0)]
        with gr.Row():
            controls += [gr.Checkbox(value=d.attention, label=t("capture_attention")),
                         gr.Checkbox(value=d.logit_lens, label=t("logit_lens"), info=t("logit_lens_info")),
                         gr.Checkbox(value=d.chat_template, label=t("chat_template"))]
        return controls

    def chapters_tabs(self) -> None:
        """A tab per chapter. The page is built before the model loads (app.py): the layer and head
        controls start at the recording's model, the chapters' first view, and follow each trace drawn."""
        run, info = self.run, recorded("en")["next"].model
        # "wrap": on a phone the tabs take two or three rows (a menu hid 8 of the 10 behind "…")
        with gr.Tabs(elem_id="explore-chapters", overflow_behavior="wrap") as self.chapters:
            with gr.Tab(t("tab_tokens"), id="tokens"):
                self.tokens = Tokens(run.models)
            with gr.Tab(t("tab_prefill"), id="prefill"):
                self.prefill = Prefill(info.layers, info.heads)
            with gr.Tab(t("tab_kv"), id="kv"):
                self.kv = KvCache()
            with gr.Tab(t("tab_decode"), id="decode"):
                self.decode = Decode(run.models, info.layers, info.heads,
                                     lambda: ForkPanel(run, self.tree, self.branch, self.trace))
            with gr.Tab(t("tab_speed"), id="speed"):
                self.speed = Speed(run, self.lang)
            with gr.Tab(t("tab_lab"), id="lab"):
                intro(5)
                lab.build(run.models, self.model_id, self.lang)
            with gr.Tab(t("tab_reasoning"), id="reasoning"):
                intro(6)
                reasoning.build(run.models, self.model_id, self.lang)
            with gr.Tab(t("tab_sampling"), id="sampling"):
                self.sampling = Sampling()
            with gr.Tab(t("tab_floor"), id="floor"):
                intro(8)
                floor.build(run.models, self.model_id, self.lang, self.tree)
            with gr.Tab(t("tab_file"), id="file"):
                self.file = TraceFile(run.models)

    # --- every chapter from one trace -----------------------------------------------------------
    @property
    def fork(self) -> ForkPanel:
        return self.decode.fork

    @property
    def views(self) -> list:
        """Everything `render` fills, in its order."""
        return [*self.tokens.views, *self.prefill.views, *self.kv.views, *self.decode.views, *self.speed.views,
                *self.sampling.views, self.file.download, self.output, self.stale, self.fork.tree,
                *self.fork.availability, self.status]

    @property
    def render_inputs(self) -> list:
        return [self.trace, *self.prefill.controls, self.decode.layer, self.decode.head, *self.sampling.knobs,
                self.lang, self.tree, self.branch]

    def source_choices(self) -> list[tuple[str, str]]:
        """Where a run can go: this page's model (named after the default, which can change if it
        fails to load: app.py's `describe` redraws the list), then each served model."""
        served = [(f"{e.name} ({e.model})", e.name) for e in self.run.endpoints.values()]
        return [(short_name(self.run.models.default), ""), *served]

    def prompt_info(self, lang: str) -> str:
        limits = self.run.models.limits
        return text("prompt_info", lang).format(chars=f"{limits.max_prompt_chars:,}",
                                                tokens=f"{limits.max_prompt_tokens:,}")

    def render_all(self, *inputs):
        """Every chapter drawn from the trace on show, and its JSON written for download."""
        return self.render(*inputs, write_file=True)

    def render_run(self, *inputs):
        """A finished run's chapters; its download is written at once without the logit lens, and the
        profile panel's event after this one writes it again with the lens (off the visitor's wait)."""
        return self.render(*inputs, write_file=True, lens_file=False)

    def redraw(self, *inputs):
        """Every chapter redrawn for the lineage now on show; the download stays the tree's file."""
        return self.render(*inputs, write_file=False)

    def relabel_all(self, trace, layer, head, query, d_layer, d_head, temperature, top_k, top_p, seed, lang, tree,
                    branch) -> dict:
        """Every chapter redrawn in the page's language (known at load, or switched); the download
        stays the file it was. Before the visitor's first run the chapters show the walkthrough's
        recording in that language (never empty boxes), the output area says it is one, and the
        trace, the tree and the branch on show become the recording's."""
        controls_lang = (layer, head, query, d_layer, d_head, temperature, top_k, top_p, seed, lang)
        # the recording follows the language, unless the visitor has forked it (keep the branches)
        if trace is None or (is_recording(trace) and not (tree and tree.branches)):
            trace = recorded(lang)["next"]

            def draw():
                return self.render(trace, *controls_lang, trace, ROOT, write_file=False, recording=True)
            models = self.run.models        # the same for every visitor: drawn once (ui/page/same_draw.py)
            views = SAME.get((models.default, *controls_lang), draw) if models.loaded else draw()
            return {self.trace: trace, self.tree: trace, self.branch: ROOT, **views}
        return self.render(trace, *controls_lang, tree, branch, write_file=False)

    def download(self, trace, tree, write_file: bool, recording: bool, lens_file: bool, lang: str):
        if write_file:
            return self.run.trace_file(tree or trace, lens=lens_file)
        return str(recording_file(lang)) if recording else gr.skip()

    def render(self, trace, layer, head, query, d_layer, d_head, temperature, top_k, top_p, seed, lang, tree,
               branch, write_file: bool, recording: bool = False, lens_file: bool = True) -> dict:
        """Every view (self.views) drawn from `trace`, as {component: update}."""
        if trace is None:
            return gr.skip()
        fresh = write_file or recording
        shown = find(tree, branch) if tree is not None and branch and branch != ROOT else None   # a branch on show
        # the sampling playground opens on the step where the model was least sure
        unsure = least_sure_step(trace)
        output = (recording_html(trace, lang) if recording else   # the marker: every chapter is drawn
                  html.output_html(trace, lang=lang) + '<span class="tbt-rendered"></span>')
        values = [*self.tokens.draw(trace, lang), *self.prefill.draw(trace, layer, head, query, lang, fresh),
                  *self.kv.draw(trace, lang), *self.decode.draw(trace, d_layer, d_head, lang, shown.at if shown else None),
                  *self.speed.draw(trace, lang, shown), *self.sampling.draw(trace, unsure, (temperature, top_k, top_p, seed), lang),
                  self.download(trace, tree, write_file, recording, lens_file, lang), output,
                  gr.update(elem_classes=[HIDDEN]), tree_html(tree or trace, branch or ROOT, lang),
                  *self.fork.available(trace, lang),
                  self.status_of(trace, shown, lang, recording)]
        return dict(zip(self.views, values, strict=True))

    @staticmethod
    def status_of(trace, branch, lang: str, recording: bool):
        """The line under the answer for what is on show: the run's figures, or the branch's own."""
        if recording:
            return gr.skip()
        return status_md(trace, lang) if branch is None else branch_status_md(trace, branch, lang)

    def check_run(self, prompt, *settings_and_lang) -> dict:
        """The run's validator (Run.check): its refusal is said under the prompt box."""
        refusal = self.run.check(prompt, *settings_and_lang)
        return {self.prompt: gr.validate(refusal is None, refusal or "")}

    def pick_step(self, tr, d_layer, d_head, temperature, top_k, top_p, seed, lang, evt: gr.EventData):
        """A click on an answer token: every view that depends on the step follows it (Decode and
        Sampling), and the Decode chapter comes forward."""
        if tr is None:
            return gr.skip()
        index = max(0, min(int(evt.index), max(len(tr.steps) - 1, 0)))
        return [gr.update(value=index), gr.update(value=index), *self.decode.view(tr, index, d_layer, d_head, lang),
                *sampling_view(tr, index, temperature, top_k, top_p, seed, lang), gr.Tabs(selected="decode")]

    def wire(self) -> None:
        streamed = while_running(closed_on_stop(on_gpu(self.run.run, for_tokens(1)), self.run.flags))
        run = gr.on([self.run_btn.click, self.prompt.submit], streamed,
                    validator=self.check_run, inputs=[self.prompt, *self.settings, self.model_id, self.source, self.lang],
                    outputs=[self.trace, self.output, self.status, self.tokens.chips, self.stale, self.stop_btn],
                    **ENGINE, **PRIVATE)
        drawn = run.then(lambda tr: (tr, ROOT), self.trace, [self.tree, self.branch], **PRIVATE).then(
            self.render_run, self.render_inputs, self.views, **PRIVATE)
        self.speed.profile.wire(drawn, self.trace, self.tree, self.decode.step, self.file.download)
        stop_wiring(self.stop_btn, self.run.stop, [run])
        self.file.wire(self)
        for chapter in (self.tokens, self.prefill, self.decode, self.sampling):
            chapter.wire(self.trace, self.lang)
        self.speed.wire(self.prompt, self.model_id, self.source, self.settings[-1], self.lang)
        self.fork.wire(self.decode.step, self.model_id, self.lang, self.file.download,
                       (self.render_all, self.render_inputs, self.views), (self.redraw, self.render_inputs, self.views))
        self.output.click(self.pick_step, [self.trace, self.decode.layer, self.decode.head, *self.sampling.knobs, self.lang],
                          [self.decode.step, self.sampling.step, *self.decode.shown, *self.sampling.shown,
                           self.chapters], **PRIVATE).then(None, js=SHOW_DECODE_JS, **PRIVATE)
