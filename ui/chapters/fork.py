"""Fork the future (inside the Decode chapter): continue the run on show from its current step
with another candidate, on the run's cached prefix, and keep every branch in a tree.

State: the Explore tab's `trace` is what the chapters draw (the run, or one branch's view);
`tree` is the whole trace (the run and its branches: what is downloaded); `branch` names the
lineage on show (engine.branches.ROOT for the run).
"""

from __future__ import annotations

import dataclasses
import re

import gradio as gr

from engine import EngineError
from engine.schema.branches import ROOT, find, lineage, view
from viz import html
from viz.text import verdicts
from viz.fmt import fmt_bytes, fmt_ms, fmt_p, visible
from viz.html.tree import tree_html

from ui.host.errors import message, refused, say
from ui.page.i18n import t, text
from ui.chapters.common import ENGINE, PRIVATE
from ui.host.gpu import for_tokens, on_gpu
from ui.host.models import torch_side

TREE_CLICK_JS = """
element.addEventListener('click', (e) => {
  const row = e.target.closest('[data-index]');
  if (row) trigger('click', {index: Number(row.dataset.index)});
});
"""
STREAM_EVERY = 4          # redraw the streaming branch every few tokens


def token_choices(trace, step: int, lang: str):
    """The step's stored candidates as (label, id), the model's second choice selected (the first
    is what the run already did)."""
    if trace is None or not trace.steps:
        return gr.update(choices=[], value=None)
    s = trace.steps[min(max(int(step or 0), 0), len(trace.steps) - 1)]
    chosen = f" · {text('fork_chosen', lang)}"
    choices = [(f"{rank + 1}. {visible(c.text)} ({fmt_p(c.p_model)}){chosen if c.id == s.id else ''}", c.id)
               for rank, c in enumerate(s.candidates)]
    other = next((c.id for c in s.candidates if c.id != s.id), s.id)
    return gr.update(choices=choices, value=other)


def md_text(text_: str) -> str:
    """A model's token inside Markdown: its characters stay characters (no emphasis, no HTML)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~])", r"\\\1", text_)


def result_md(tree, branch_id: str, lang: str) -> str:
    """What the branch cost, and (once measured) what recomputing its prefix costs."""
    b = find(tree, branch_id)
    first = b.steps[0]
    parent = text("tree_parent_run", lang) if b.parent == ROOT else b.parent
    was = next((s.token for s in lineage(tree, b.parent)[b.at:b.at + 1]), "")
    note = text("fork_result", lang).format(
        id=b.id, parent=parent, step=b.at, token=md_text(visible(first.token)),
        p=fmt_p(first.chosen_p_model), was=md_text(visible(was)),
        ttft=fmt_ms(b.summary.ttft_ms if b.summary else None), reused=f"{b.reused_tokens:,}",
        copy=fmt_ms(b.copy_ms), memory=fmt_bytes(b.cache_bytes))
    if b.rebuilt_ms is not None:
        note += text("fork_rebuilt", lang).format(ms=fmt_ms(b.rebuilt_ms))
    if b.recompute_ms is not None and b.summary and b.summary.ttft_ms:
        note += "\n\n" + text("fork_recompute", lang).format(
            reused=f"{b.reused_tokens + 1:,}", step=b.at, ms=fmt_ms(b.recompute_ms),
            ratio=f"{b.recompute_ms / b.summary.ttft_ms:.1f}×")
    # why servers keep prefixes, said as far as this measurement shows it (faster, or not here)
    return note + "\n\n" + verdicts.fork_reuse(b.recompute_ms, b.summary.ttft_ms if b.summary else None, lang)


def why_not(trace, lang: str) -> str | None:
    """Why the trace on show cannot be continued here, in `lang` (the panel says it beside its
    disabled buttons), or None. What depends on the visitor's choices (the step, the token) is
    checked when they press the button (ForkPanel.check)."""
    if trace is None:
        return None
    if trace.served is not None:                 # its KV cache lives on the server
        return say("fork_served", lang)
    if not trace.settings.use_cache:
        return say("fork_no_cache", lang)
    return None


class ForkPanel:
    def __init__(self, run, tree_state, branch, trace):
        """`run`: the page's runs (ui/chapters/run.py: models, Stop flags, files); `tree_state`,
        `branch`, `trace`: the Explore tab's states the panel reads and writes."""
        self.run = run
        self.tree_state, self.branch, self.trace = tree_state, branch, trace
        with gr.Accordion(t("fork_title"), open=True, elem_id="fork"):
            gr.Markdown(t("fork_intro"), elem_classes="tbt-hint")
            with gr.Row():
                self.token = gr.Dropdown(choices=[], label=t("fork_token"), elem_id="fork-token", scale=3)
                self.new = gr.Slider(1, 256, value=24, step=1, label=t("fork_new"), scale=2, elem_id="fork-new")
                self.temperature = gr.Slider(0, 2, value=0, step=0.05, label=t("fork_temperature"), scale=2)
            # why the buttons below are off for the trace on show (a served run), in the page's language
            self.blocked = gr.Markdown(visible=False, elem_id="fork-blocked")
            with gr.Row():
                self.button = gr.Button(t("fork_btn"), variant="primary", elem_id="fork-run")
                self.recompute = gr.Button(t("recompute_btn"), elem_id="fork-recompute")
            self.stream = gr.HTML(elem_id="fork-stream")
            self.note = gr.Markdown(elem_id="fork-note")
            self.tree = gr.HTML(elem_id="fork-tree", js_on_load=TREE_CLICK_JS)

    @property
    def availability(self) -> list:
        """The components `available` fills."""
        return [self.button, self.recompute, self.blocked]

    @staticmethod
    def available(trace, lang: str) -> list:
        """The buttons on or off for `trace`, and the reason when off."""
        reason = why_not(trace, lang)
        return [gr.update(interactive=reason is None), gr.update(interactive=reason is None),
                gr.update(value=f"⚠ {reason}" if reason else "", visible=reason is not None)]

    def check(self, tree, shown, step, token, new, temperature, model_id, lang) -> dict:
        """The fork's validator: a fork the engine would refuse (no run yet, a served run, a token
        that is not a stored candidate, a full tree) is said under the token box, where the
        visitor chose, in the page's language; nothing runs and nothing else changes."""
        reason = None
        if tree is None or not tree.steps:
            reason = text("fork_needs_steps", lang)
        elif (reason := why_not(tree, lang)) is None and self.run.models.loaded:
            try:               # the engine's own checks, before any model work (a loaded model's)
                engine = self.run.models.get(model_id, lang)
                torch_side("engine.run.fork").check_fork(engine, tree, int(step or 0),
                                                         int(token) if token is not None else -1, shown)
            except EngineError as exc:
                reason = message(exc, lang)
            except gr.Error as exc:          # the model is not offered
                reason = exc.message
        return {self.token: gr.validate(reason is None, reason or "")}

    def branch_off(self, tree, shown, step, token, new, temperature, model_id, lang, request: gr.Request):
        """Stream one branch into the panel; at the end the tree, the branch on show and its view
        (the chapters redraw after: explore.py), as {component: update}. Refusals are said by
        `check` before this runs; what fails only while it runs is raised, in the page's language,
        onto the panel's own outputs."""
        if tree is None or not tree.steps:
            raise gr.Error(text("fork_needs_steps", lang), title=say("error_title", lang))
        try:
            engine = self.run.models.get(model_id, lang)
            base = view(tree, shown).settings
            settings = dataclasses.replace(base, temperature=float(temperature or 0))
            with self.run.flags.running(request) as flag:
                chosen = int(token) if token is not None else -1
                events = torch_side("engine.run.fork").stream_fork(engine, tree, int(step or 0), chosen, parent=shown,
                                                               max_new_tokens=int(new or 1), settings=settings,
                                                               cancel=flag)
                try:
                    while True:
                        event = next(events)
                        n = len(event.trace.steps) - int(step or 0)
                        if event.kind == "step" and n % STREAM_EVERY:
                            continue
                        yield {self.stream: html.output_html(event.trace, lang=lang),
                               self.note: text("fork_running", lang).format(id="…", n=n)}
                except StopIteration as done:
                    forked = done.value
                finally:
                    events.close()
        except EngineError as exc:
            raise refused(exc, lang) from None
        branch = forked.branches[-1].id
        # the answer area above now shows the branch; the streaming box empties
        yield {self.tree_state: forked, self.branch: branch, self.trace: view(forked, branch), self.stream: "",
               self.note: result_md(forked, branch, lang), self.tree: tree_html(forked, branch, lang)}

    def measure(self, tree, shown, model_id, lang):
        """The branch on show, its first token recomputed from scratch: (tree, note, download)."""
        if tree is None or shown == ROOT:
            raise gr.Error(text("fork_recompute_first", lang), title=say("error_title", lang))
        try:
            engine = self.run.models.get(model_id, lang)
            measured = torch_side("engine.run.fork").measure_recompute(engine, tree, shown)
        except EngineError as exc:
            raise refused(exc, lang) from None
        return measured, result_md(measured, shown, lang), self.run.trace_file(measured)

    @staticmethod
    def pick(tree, lang, evt: gr.EventData):
        """A click on a tree row: that lineage goes on show (the chapters redraw after)."""
        if tree is None:
            return gr.skip()
        rows = [ROOT] + [b.id for b in tree.branches]
        branch = rows[min(max(int(evt.index), 0), len(rows) - 1)]
        return branch, view(tree, branch), result_md(tree, branch, lang) if branch != ROOT else ""

    def wire(self, step, model_id, lang, download, render_all: tuple, redraw: tuple) -> None:
        """`step`: the Decode chapter's step slider (the fork's step); `render_all` and `redraw`:
        (function, inputs, outputs) that draw every chapter from the trace on show, the first also
        writing its download."""
        forked = self.button.click(
            on_gpu(self.branch_off, for_tokens(4)),   # (not "fork": gr.api names /fork)
            [self.tree_state, self.branch, step, self.token, self.new, self.temperature, model_id, lang],
            {self.tree_state, self.branch, self.trace, self.stream, self.note, self.tree}, validator=self.check,
            **ENGINE, **PRIVATE)
        forked.success(*render_all, **PRIVATE)
        self.recompute.click(on_gpu(self.measure, 60), [self.tree_state, self.branch, model_id, lang],
                             [self.tree_state, self.note, download], **ENGINE, **PRIVATE)
        self.tree.click(self.pick, [self.tree_state, lang], [self.branch, self.trace, self.note],
                        **PRIVATE).success(*redraw, **PRIVATE)
