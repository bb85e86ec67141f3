"""The Explore tab: one prompt, Run/Stop, the streaming answer, and a tab per chapter."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import gradio as gr

from engine.schema.branches import ROOT
from engine.run.request import APP_DEFAULTS
from engine.schema.specs import short_name
from viz import html
from viz.fmt import device_name
from viz.html.tree import tree_html

from ui.chapters import floor as floor_tab, lab as lab_tab, reasoning as reasoning_tab

from ui.page.bar import explore_bar
from ui.chapters.profile import ProfilePanel
from ui.chapters.actions import Actions, status_md
from ui.chapters.fork import ForkPanel, token_choices
from ui.host.gpu import for_tokens, on_gpu, stop_cancels
from ui.host.recordings import examples, is_recording, recorded, recording_file
from ui.page.i18n import t, text
from ui.host.runs import ENGINE_CONCURRENCY
from ui.chapters.views import (AVERAGE, clamp, decode_view, head_choices, kv_view, least_sure_step, prefill_view,
                    sampling_view, speed_view, tokens_view, whole_word)

CLICK_JS = """
element.addEventListener('click', (e) => {
  const chip = e.target.closest('[data-index],[data-step]');
  if (!chip) return;
  trigger('click', {index: Number(chip.dataset.index ?? chip.dataset.step)});
});
"""
PRIVATE = {"api_visibility": "private"}
ENGINE = {"concurrency_limit": ENGINE_CONCURRENCY, "concurrency_id": "engine"}


def intro(step: int) -> gr.Markdown:
    """A chapter's one-line introduction: the same line that opens its walkthrough step, and under it
    the chapter's legend: which of its numbers are measured, which a formula, which a projection."""
    line = gr.Markdown(t(f"wt_{step}_intro"), elem_classes="tbt-intro")
    gr.Markdown(t(f"wt_{step}_legend"), elem_classes="tbt-hint tbt-chapter-legend")
    return line


def plot(elem_id: str) -> gr.Plot:
    return gr.Plot(show_label=False, elem_id=elem_id)   # charts carry their own titles


def first_word(trace) -> int:
    """Index of the first whole word of the visitor's own text (after the chat template's
    preamble; views.whole_word: a Chinese prompt opens on a character, not on the byte piece
    <E5 B0>), else of its first token."""
    begin = max(trace.prompt.templated.find(trace.prompt.raw), 0)
    tokens = trace.prompt.tokens
    own = [i for i, t in enumerate(tokens) if t.start >= begin and not t.special]
    return next((i for i in own if whole_word(tokens, i)), own[0] if own else 0)


def recording_html(trace, lang: str) -> str:
    """The output area while the chapters show a recording: what it is, and how to run your own."""
    template = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escape(text("explore_recording", lang), quote=False))
    words = template.format(prompt=escape(trace.prompt.raw), date=escape(trace.created[:10]),
                            device=escape(device_name(trace.model.device)))
    return f'<div class="tbt-recording">{words}</div>'


class Explore:
    def __init__(self, actions: Actions, model_id: gr.components.Component, lang: gr.State):
        self.actions, self.lang, self.model_id = actions, lang, model_id
        # the page is built before the model loads (app.py): the layer and head controls start at
        # the recording's model, the chapters' first view, and follow each trace drawn (render)
        limits, info = actions.models.limits, recorded("en")["next"].model
        self.trace = gr.State(None)          # what the chapters draw: the run, or one branch's view
        self.tree_state = gr.State(None)     # the run with all its branches (what is downloaded)
        self.branch = gr.State(ROOT)         # the lineage on show
        with gr.Row():
            with gr.Column(scale=2):
                self.prompt = gr.Textbox(label=t("prompt"), lines=3, max_lines=12, elem_id="prompt",
                                         info=self.prompt_info("en"))
                gr.Examples(examples=examples(), inputs=self.prompt, label=t("examples"))
                # the host's served models (TBT_ENDPOINTS), beside this page's own: a visitor picks, never types a URL
                self.source = gr.Dropdown(self.source_choices(), value="", label=t("run_on"), info=t("run_on_info"),
                                          visible=bool(actions.endpoints), elem_id="run-on")
                with gr.Row():
                    self.run_btn = gr.Button(t("run"), variant="primary", elem_id="run")
                    self.stop_btn = gr.Button(t("stop"), variant="stop", elem_id="stop")
                with gr.Accordion(t("settings"), open=False):
                    self.max_new = gr.Slider(1, limits.max_new_tokens, value=APP_DEFAULTS.max_new_tokens, step=1,
                                             label=t("max_new_tokens"), elem_id="max-new")
                    self.temperature = gr.Slider(0, 2, value=APP_DEFAULTS.temperature, step=0.05,
                                                 label=t("temperature_greedy"))
                    self.top_k = gr.Slider(0, 200, value=APP_DEFAULTS.top_k, step=1, label=t("top_k_off"))
                    self.top_p = gr.Slider(0.01, 1, value=APP_DEFAULTS.top_p, step=0.01, label=t("top_p_off"))
                    self.seed = gr.Number(value=APP_DEFAULTS.seed, precision=0, label=t("seed"), minimum=0)
                    with gr.Row():
                        self.attention_on = gr.Checkbox(value=APP_DEFAULTS.attention, label=t("capture_attention"))
                        self.lens_on = gr.Checkbox(value=APP_DEFAULTS.logit_lens, label=t("logit_lens"),
                                                  info=t("logit_lens_info"))
                        self.template_on = gr.Checkbox(value=APP_DEFAULTS.chat_template, label=t("chat_template"))
            with gr.Column(scale=3):
                self.output = gr.HTML(elem_id="output", js_on_load=CLICK_JS)
                self.status = gr.Markdown(elem_id="status")

        self.stale = gr.Markdown(visible=False, elem_id="stale")
        self.share_bar = explore_bar()      # link to this view, charts out, slides (ui/share/links.py)
        with gr.Tabs(elem_id="explore-chapters") as self.chapters:
            with gr.Tab(t("tab_tokens"), id="tokens"):
                intro(0)
                self.prompt_chips = gr.HTML(elem_id="prompt-chips", js_on_load=CLICK_JS)
                self.compare = gr.HTML(elem_id="compare")
                with gr.Row():
                    self.embedding_plot = plot("embedding")
                    self.neighbors = gr.HTML(elem_id="neighbors")
            with gr.Tab(t("tab_prefill"), id="prefill"):
                intro(1)
                self.prefill_facts = gr.Markdown(elem_id="prefill-facts")
                with gr.Row():
                    self.layer = gr.Slider(0, info.layers - 1, value=0, step=1, label=t("layer"),
                                           elem_id="prefill-layer")
                    self.head = gr.Dropdown(head_choices(info.heads), value="average", label=t("head"))
                    self.query = gr.Slider(0, 255, value=0, step=1, label=t("query_token"))
                self.heatmap, self.head_view = plot("heatmap"), plot("head-view")
            with gr.Tab(t("tab_kv"), id="kv"):
                intro(2)
                self.kv_plot, self.projection_plot = plot("kv-growth"), plot("kv-projection")
                self.projection_table = gr.Dataframe(label=t("projection_table"), interactive=False)
            with gr.Tab(t("tab_decode"), id="decode"):
                intro(3)
                self.step = gr.Slider(0, 1, value=0, step=1, label=t("decode_step"), elem_id="step")
                self.step_facts = gr.HTML(elem_id="step-facts")
                self.candidates = plot("candidates")
                self.fork = ForkPanel(actions, self.tree_state, self.branch, self.trace)
                with gr.Row():
                    self.d_layer = gr.Slider(0, info.layers - 1, value=info.layers - 1, step=1, label=t("layer"),
                                             elem_id="decode-layer")
                    self.d_head = gr.Dropdown(head_choices(info.heads), value="average", label=t("head"),
                                              elem_id="decode-head")
                self.attention_row, self.lens = plot("attention-row"), plot("lens")
            with gr.Tab(t("tab_speed"), id="speed"):
                intro(4)
                self.speed_cards = gr.HTML(elem_id="speed-cards")
                self.timeline, self.step_times = plot("timeline"), plot("step-times")
                self.profile = ProfilePanel(actions, lang)     # where the time went, op by op (after the run)
                self.sweep_btn = gr.Button(t("sweep"), elem_id="sweep")
                self.sweep_plot = gr.Plot(show_label=False, elem_id="sweep-plot", visible=False)  # until measured
                # a served model under 1-8 concurrent streams (only where the host lists endpoints)
                self.load_btn = gr.Button(t("load_sweep"), elem_id="load-sweep", visible=bool(actions.endpoints))
                self.load_plot = gr.Plot(show_label=False, elem_id="load-plot", visible=False)
                self.load_table = gr.Dataframe(interactive=False, elem_id="load-table", visible=False, wrap=True)
            with gr.Tab(t("tab_lab"), id="lab"):
                intro(5)
                lab_tab.build(actions.models, model_id, lang)
            with gr.Tab(t("tab_reasoning"), id="reasoning"):
                intro(6)
                reasoning_tab.build(actions.models, model_id, lang)
            with gr.Tab(t("tab_sampling"), id="sampling"):
                intro(7)
                with gr.Row():
                    self.s_step = gr.Slider(0, 1, value=0, step=1, label=t("decode_step"))
                    self.s_temperature = gr.Slider(0, 3, value=1, step=0.05, label=t("temperature"))
                    self.s_top_k = gr.Slider(0, 50, value=0, step=1, label=t("top_k_off"), elem_id="s-top-k")
                    self.s_top_p = gr.Slider(0.01, 1, value=1, step=0.01, label=t("top_p"))
                    self.s_seed = gr.Number(value=0, precision=0, label=t("seed"), minimum=0)
                self.playground = plot("playground")
                self.survivors = gr.HTML(elem_id="survivors")
            with gr.Tab(t("tab_floor"), id="floor"):
                intro(8)
                floor_tab.build(actions.models, model_id, lang, self.tree_state)
            with gr.Tab(t("tab_file"), id="file"):
                self.download = gr.File(label=t("download"), interactive=False, elem_id="download")
                self.upload = gr.File(label=t("upload"), file_types=[".json"], type="filepath", elem_id="upload")
        self.wire()

    # --- every chapter from one trace -----------------------------------------------------------
    @property
    def views(self) -> list:
        return [self.prompt_chips, self.compare, self.prefill_facts, self.heatmap, self.head_view, self.kv_plot,
                self.projection_plot, self.projection_table, self.step_facts, self.candidates,
                self.attention_row, self.lens, self.speed_cards, self.timeline, self.step_times,
                self.playground, self.survivors, self.download, self.step, self.s_step, self.query,
                self.embedding_plot, self.neighbors, self.output, self.layer, self.head, self.d_layer, self.d_head,
                self.stale, self.fork.tree, self.fork.token, *self.fork.availability]

    def check_file(self, path, lang) -> dict:
        """The upload's validator: a file that is not a usable trace is refused on the upload box
        itself, in the page's language, before anything changes (ui/host/uploads.py says why)."""
        try:
            self.actions.load(path, lang)
        except gr.Error as exc:
            return {self.upload: gr.validate(False, exc.message)}
        return {self.upload: gr.validate(True, "")}

    def load_file(self, path, lang) -> dict:
        """A visitor's trace file: the trace, a status line that says a file is on show (its name,
        model, when and where it was recorded, then its figures), and its prompt in the box."""
        trace = self.actions.load(path, lang)
        banner = text("viewing_file", lang).format(
            name=escape(Path(path).name), model=escape(trace.model.id), date=escape(trace.created[:10]),
            device=escape(device_name(trace.model.device)))
        return {self.trace: trace, self.status: f"{banner}  \n{status_md(trace, lang)}", self.prompt: trace.prompt.raw,
                self.tree_state: trace, self.branch: ROOT}

    def check_run(self, prompt, *settings_and_lang) -> dict:
        """The run's validator (Actions.check_run): its refusal is said under the prompt box."""
        refusal = self.actions.check_run(prompt, *settings_and_lang)
        return {self.prompt: gr.validate(refusal is None, refusal or "")}

    def source_choices(self) -> list[tuple[str, str]]:
        """Where a run can go: this page's model (named after the default, which can change if it
        fails to load: app.py's `describe` redraws the list), then each served model."""
        served = [(f"{e.name} ({e.model})", e.name) for e in self.actions.endpoints.values()]
        return [(short_name(self.actions.models.default), ""), *served]

    def prompt_info(self, lang: str) -> str:
        limits = self.actions.models.limits
        return text("prompt_info", lang).format(chars=f"{limits.max_prompt_chars:,}",
                                                tokens=f"{limits.max_prompt_tokens:,}")

    @property
    def render_inputs(self) -> list:
        return [self.trace, self.layer, self.head, self.query, self.d_layer, self.d_head, self.s_temperature,
                self.s_top_k, self.s_top_p, self.s_seed, self.lang, self.tree_state, self.branch]

    def render_all(self, *inputs):
        """Every chapter drawn from the trace on show, and its JSON written for download."""
        return self.render(*inputs, write_file=True)

    def render_run(self, *inputs):
        """A finished run's chapters; its download is written at once without the logit lens, and the
        profile panel's event after this one writes it again with the lens (off the visitor's wait)."""
        return self.render(*inputs, write_file=True, lens_file=False)

    def relabel_all(self, trace, layer, head, query, d_layer, d_head, temperature, top_k, top_p, seed, lang,
                    tree, branch) -> dict:
        """Every chapter redrawn in the page's language (known at load, or switched); the download
        stays the file it was. Before the visitor's first run the chapters show the walkthrough's
        recording in that language (never empty boxes), and the output area says it is one, and
        the trace, the tree and the branch on show become the recording's."""
        controls = (layer, head, query, d_layer, d_head, temperature, top_k, top_p, seed, lang)
        # the recording follows the language, unless the visitor has forked it (keep the branches)
        if trace is None or (is_recording(trace) and not (tree and tree.branches)):
            trace = recorded(lang)["next"]
            return {self.trace: trace, self.tree_state: trace, self.branch: ROOT,
                    **self.render(trace, *controls, trace, ROOT, write_file=False, recording=True)}
        return self.render(trace, *controls, tree, branch, write_file=False)

    def redraw(self, *inputs):
        """Every chapter redrawn for the lineage now on show; the download stays the tree's file."""
        return self.render(*inputs, write_file=False)

    def render(self, trace, layer, head, query, d_layer, d_head, temperature, top_k, top_p, seed, lang, tree,
               branch, write_file: bool, recording: bool = False, lens_file: bool = True) -> dict:
        """Every view (self.views) drawn from `trace`, as {component: update}."""
        if trace is None:
            return gr.skip()
        actions = self.actions
        last = max(len(trace.steps) - 1, 0)
        word = first_word(trace)   # the embedding opens on the visitor's first whole word, not <|im_start|>
        # the sampling playground opens on the step where the model was least sure
        unsure = least_sure_step(trace)
        mapped = (trace.attention.prefill_tokens if trace.attention else len(trace.prompt.tokens)) - 1
        # a new trace opens the head view on its last prompt token (it sees the whole prompt; token
        # 0 sees only itself); a relabel keeps the visitor's choice
        q = mapped if write_file or recording else min(int(query or 0), mapped)
        # the layer and head controls follow the model of the trace on screen (a file from another
        # model can have more or fewer of them than the model this page runs)
        layers, heads = trace.model.layers, head_choices(trace.model.heads, lang)
        layer, d_layer = clamp(layer, layers - 1), clamp(d_layer, layers - 1)
        head, d_head = (h if h in [v for _, v in heads] else AVERAGE for h in (head, d_head))
        return dict(zip(self.views, [*tokens_view(trace, actions.comparison(trace), word, lang),
                *prefill_view(trace, layer, head, q, lang), *kv_view(trace, lang),
                *decode_view(actions.with_lens(trace, last), last, d_layer, d_head, lang), *speed_view(trace, lang),
                *sampling_view(trace, unsure, temperature, top_k, top_p, seed, lang),
                actions.trace_file(tree or trace, lens=lens_file) if write_file else str(recording_file(lang)) if recording else gr.skip(),
                gr.update(maximum=max(last, 1), value=last), gr.update(maximum=max(last, 1), value=unsure),
                gr.update(maximum=max(mapped, 1), value=q), *actions.embedding(trace, word, lang),
                # the marker tells a watcher (and the browser test) that every chapter is drawn
                recording_html(trace, lang) if recording else
                html.output_html(trace, lang=lang) + '<span class="tbt-rendered"></span>',
                gr.update(maximum=max(layers - 1, 1), value=layer), gr.update(choices=heads, value=head),
                gr.update(maximum=max(layers - 1, 1), value=d_layer), gr.update(choices=heads, value=d_head),
                gr.update(visible=False), tree_html(tree or trace, branch or ROOT, lang),
                token_choices(trace, last, lang), *self.fork.available(trace, lang)], strict=True))

    def wire(self) -> None:
        actions = self.actions
        settings_in = [self.max_new, self.temperature, self.top_k, self.top_p, self.seed, self.attention_on,
                       self.lens_on, self.template_on]
        run = gr.on([self.run_btn.click, self.prompt.submit], on_gpu(actions.run, for_tokens(1)),
                    validator=self.check_run, inputs=[self.prompt, *settings_in, self.model_id, self.source,
                                                         self.lang],
                    outputs=[self.trace, self.output, self.status, self.prompt_chips, self.stale], **ENGINE, **PRIVATE)
        drawn = run.then(lambda tr: (tr, ROOT), self.trace, [self.tree_state, self.branch], **PRIVATE).then(
            self.render_run, self.render_inputs, self.views, **PRIVATE)
        self.profile.wire(drawn, self.trace, self.tree_state, self.step, self.download)
        self.stop_btn.click(actions.stop, None, None, queue=False, **PRIVATE, **stop_cancels(run))
        self.upload.upload(self.load_file, [self.upload, self.lang],
                           {self.trace, self.status, self.prompt, self.tree_state, self.branch},
                           validator=self.check_file, **PRIVATE).success(
            self.render_all, self.render_inputs, self.views, **PRIVATE)

        # a slider redraws its heavy views when it is let go (`release`: the end of a drag, or the
        # number box left), so a drag across the answer costs one redraw, not one per tick
        prefill_in = [self.trace, self.layer, self.head, self.query, self.lang]
        gr.on([self.layer.release, self.head.input, self.query.release],
              lambda tr, *a: prefill_view(tr, *a) if tr else gr.skip(), prefill_in,
              [self.prefill_facts, self.heatmap, self.head_view], trigger_mode="always_last", **PRIVATE)
        decode_out = [self.step_facts, self.candidates, self.attention_row, self.lens]
        gr.on([self.step.release, self.d_layer.release, self.d_head.input],
              lambda tr, step, *a: decode_view(actions.with_lens(tr, step), step, *a) if tr else gr.skip(),
              [self.trace, self.step, self.d_layer, self.d_head, self.lang], decode_out,
              trigger_mode="always_last", **PRIVATE)

        def pick_step(tr, d_layer, d_head, temperature, top_k, top_p, seed, lang, evt: gr.EventData):
            """A click on an answer token: every view that depends on the step follows it (Decode and
            Sampling), and the Decode chapter comes forward."""
            if tr is None:
                return gr.skip()
            index = clamp(int(evt.index), max(len(tr.steps) - 1, 0))
            return [gr.update(value=index), gr.update(value=index),
                    *decode_view(actions.with_lens(tr, index), index, d_layer, d_head, lang),
                    *sampling_view(tr, index, temperature, top_k, top_p, seed, lang), gr.Tabs(selected="decode"),
                    token_choices(tr, index, lang)]
        self.output.click(pick_step, [self.trace, self.d_layer, self.d_head, self.s_temperature, self.s_top_k,
                                      self.s_top_p, self.s_seed, self.lang],
                          [self.step, self.s_step, *decode_out, self.playground, self.survivors, self.chapters,
                           self.fork.token], **PRIVATE)
        # fork: the step on show and its candidates; a branch streams, then every chapter shows it
        self.step.release(token_choices, [self.trace, self.step, self.lang], self.fork.token, **PRIVATE)
        fork = self.fork
        # a fork the engine would refuse is said under the token box before anything runs (check)
        forked = fork.button.click(
            on_gpu(fork.branch_off, for_tokens(4)),  # (not "fork": gr.api names /fork)
            [self.tree_state, self.branch, self.step, fork.token, fork.new, fork.temperature, self.model_id, self.lang],
            {self.tree_state, self.branch, self.trace, fork.stream, fork.note, fork.tree}, validator=fork.check,
            **ENGINE, **PRIVATE)
        forked.success(self.render_all, self.render_inputs, self.views, **PRIVATE)
        fork.recompute.click(on_gpu(fork.measure, 60), [self.tree_state, self.branch, self.model_id, self.lang],
                             [self.tree_state, fork.note, self.download], **ENGINE, **PRIVATE)
        fork.tree.click(fork.pick, [self.tree_state, self.lang], [self.branch, self.trace, fork.note],
                        **PRIVATE).success(self.redraw, self.render_inputs, self.views, **PRIVATE)

        def pick_token(tr, lang, evt: gr.EventData):
            if tr is None:
                return gr.skip()
            return [tokens_view(tr, None, int(evt.index), lang)[0], *actions.embedding(tr, evt.index, lang)]
        self.prompt_chips.click(pick_token, [self.trace, self.lang],
                                [self.prompt_chips, self.embedding_plot, self.neighbors], **PRIVATE)

        sampling_in = [self.trace, self.s_step, self.s_temperature, self.s_top_k, self.s_top_p, self.s_seed,
                       self.lang]
        # the playground is light: its knobs redraw while they move; the step only when let go
        gr.on([self.s_step.release, self.s_temperature.input, self.s_top_k.input, self.s_top_p.input,
               self.s_seed.input], lambda tr, *a: sampling_view(tr, *a) if tr else gr.skip(),
              sampling_in, [self.playground, self.survivors], trigger_mode="always_last", **PRIVATE)
        self.load_btn.click(actions.load_sweep, [self.source, self.prompt, self.template_on, self.lang],
                            [self.load_plot, self.load_table], concurrency_limit=1, concurrency_id="served-load",
                            **PRIVATE)
        self.sweep_btn.click(on_gpu(actions.sweep, 120), [self.prompt, self.model_id, self.lang], self.sweep_plot,
                             **ENGINE, **PRIVATE)
