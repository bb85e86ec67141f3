"""Chapter 7: the same prompt in normal and reasoning mode, streaming side by side, and accuracy
against thinking budget on the built-in questions."""

from __future__ import annotations

import dataclasses
import time

import gradio as gr

from engine import EngineError
from engine.host import backroom
from engine.run.request import SIDE_BY_SIDE
from engine.run.side_by_side import interleave
from engine.bench.evaluation import BUDGETS, QUESTIONS, answer_text, answered, evaluate, last_answer, matches, read_answer
from engine.schema.trace import Trace
from viz import html
from viz.charts import reasoning as rviz
from viz.fmt import device_name
from viz.text import verdicts
from viz.text.labels import label
from viz.charts.notice import notice_chart

from ui.host.errors import refuse, refused
from ui.host.lab_mode import allow
from ui.host.gpu import ZERO_GPU, for_tokens, on_gpu
from ui.page.i18n import LANGS, t, text
from ui.host import recordings
from ui.host.recordings import prompt_of, recorded
from ui.chapters.common import ENGINE, PRIVATE, stop_button, stop_wiring, while_running
from ui.host.runs import STREAM_INTERVAL_S, KeptFiles, StopFlags, background, closed_on_stop
from ui.page.plot import Plot

# the examples are built-in questions (engine/bench/evaluation.py), so each one's answer is checked
EXAMPLES = [[q.text] for q in QUESTIONS if q.id in ("add", "apples", "zh-apples", "zh-day")]
CHOICES = [0, 16, 32, 64, 128, 256]       # the budgets a visitor can tick


def builtin_question(prompt: str):
    """The built-in question (engine/bench/evaluation.py) a prompt asks, checked against its answer:
    one of the set, or the walkthrough's question in another language. That one is the same problem
    in every language (assets/strings/walkthrough.json: its English is a built-in question), so a
    presenter who switches language gets the same question and the same check."""
    found = next((q for q in QUESTIONS if q.text == prompt), None)
    if found is not None:
        return found
    asked = {prompt_of(lang, "question"): lang for lang in LANGS}
    original = next((q for q in QUESTIONS if q.text == prompt_of("en", "question")), None)
    if prompt in asked and original is not None:
        return dataclasses.replace(original, lang=asked[prompt], text=prompt)
    return None


def verdict_md(normal: Trace, reasoning: Trace, lang: str, brief: bool = False) -> str:
    """Chapter 7 says plainly whether each mode's answer is right (the whole answer judged) and what
    the right one is; unless `brief` (a projector, where the narration says the rest), also how much
    later the first answer token came, what the recorded evaluation measured, why one question
    proves little and where to see a real reasoning model."""
    question = builtin_question(normal.prompt.raw)
    if question is None:
        return ""

    def said(trace: Trace) -> str:
        """The whole answer judged: the number the evaluation reads (its first) and the one it ends on."""
        reply = answer_text(trace) if answered(trace) else ""
        first, last = read_answer(question, reply), last_answer(question, reply)
        return verdicts.answer(first, matches(question, first), last, matches(question, last), lang)
    verdict = text("wt_verdict", lang).format(normal=said(normal), reasoning=said(reasoning),
                                              expected=question.answer)
    if brief:               # a projector: one more line would push the step below 720 px
        return verdict
    evaluation = recordings.evaluation()          # what the recorded evaluation measured, not "often better"

    def first_answer_ms(trace: Trace) -> float | None:
        return trace.summary.time_to_first_answer_ms if trace.summary else None
    verdict += verdicts.first_answer(first_answer_ms(normal), first_answer_ms(reasoning), lang)   # "much later"?
    if evaluation and len(evaluation.get("budgets") or []) > 1:
        verdict += label("verdict_wt_eval", lang, n=max(r["questions"] for r in evaluation["budgets"]),
                         k=len(evaluation["budgets"]), reading=verdicts.eval_budgets(evaluation, lang))
    else:
        verdict += text("wt_verdict_more", lang).format(questions=len(QUESTIONS))    # the evaluation's set
    if reasoning.reasoning == "scaffold":
        verdict += text("wt_scaffold_note", lang).format(model=reasoning.model.id.split(":")[-1])
    return verdict


class ReasoningTab:
    def __init__(self, models):
        self.models = models          # each run uses the visitor's chosen model
        self.flags = StopFlags()
        self.exports = KeptFiles("eval", keep=32)

    def stream_both(self, prompt, budget, answer_tokens, model_id, lang, request: gr.Request):
        shown = 0.0
        try:
            with self.flags.running(request) as flag:
                engine = self.models.get(model_id, lang)
                for normal, reasoning, finished in interleave(engine, prompt, budget, answer_tokens, flag):
                    if not finished and time.monotonic() - shown < STREAM_INTERVAL_S:
                        continue
                    shown = time.monotonic()
                    chart = rviz.compare_timeline(normal, reasoning, lang) if finished else gr.skip()
                    yield (html.reasoning_html(normal, lang), html.reasoning_html(reasoning, lang),
                           gr.Dataframe(rviz.comparison_table(normal, reasoning, lang), visible=True),
                           gr.Plot(chart, visible=True) if finished else gr.skip(),
                           # a built-in question is checked against its answer (else nothing is said)
                           verdict_md(normal, reasoning, lang) if finished else "", False)
        except EngineError as exc:
            raise refused(exc, lang) from None

    def run_eval(self, budgets, limit, model_id, lang, request: gr.Request):
        """A generator: progress shows under the button, and closing it (Stop on ZeroGPU) stops the
        evaluation between questions (ui/runs.background)."""
        if not budgets:
            raise refuse("no_budget", lang)
        allow(self.models, model_id, lang)      # the host's TBT_LAB: a crafted call too
        engine = self.models.get(model_id, lang)

        def shown(fraction: float, what: str) -> tuple:
            return (gr.skip(), gr.skip(), gr.skip(), gr.skip(),
                    label("in_progress", lang, pct=f"{fraction:.0%}", what=what))
        yield shown(0.0, "")
        try:
            with self.flags.running(request) as flag:
                chosen = sorted(int(b) for b in budgets)
                if ZERO_GPU:                 # the GPU worker is a process of its own already
                    work = lambda progress: evaluate(engine, chosen, limit=int(limit), progress=progress,  # noqa: E731
                                                     cancel=flag)
                else:                        # a job that stands still while visitors run (engine/host/backroom.py)
                    work = lambda progress: backroom.call(  # noqa: E731
                        "evaluation", f"{len(chosen)} budgets", "engine.bench.evaluation:evaluate",
                        {"budgets": chosen, "limit": int(limit)}, model=engine.info.id, progress=progress, cancel=flag)
                result = yield from background(work, flag, shown)
        except EngineError as exc:
            raise refused(exc, lang) from None
        yield (result, *self.eval_views(result, lang), self.exports.write_json(result), "")

    @staticmethod
    def eval_views(result: dict | None, lang: str):
        if not result or not result.get("budgets"):
            return notice_chart(text("eval_none", lang)), None
        return rviz.eval_chart(result, lang), rviz.eval_table(result, lang)

    def stop(self, request: gr.Request):
        self.flags.stop_tab(request)


def recording_values(lang: str) -> tuple:
    """(normal column, reasoning column, table, timeline, note) of the walkthrough's recorded
    comparison: what the tab shows before the visitor runs one (never empty columns)."""
    rec = recorded(lang)
    normal, reasoning = rec["normal"], rec["reasoning"]
    source = text("r_recording", lang).format(prompt=normal.prompt.raw, date=normal.created[:10],
                                              device=device_name(normal.model.device))
    return (html.reasoning_html(normal, lang), html.reasoning_html(reasoning, lang),
            rviz.comparison_table(normal, reasoning, lang), rviz.compare_timeline(normal, reasoning, lang),
            f"{source}\n\n{verdict_md(normal, reasoning, lang)}")


class ReasoningChapter:
    """The tab inside the caller's gr.Tab; runs use the visitor's model (`model_id`, a component)."""

    def __init__(self, models, model_id, lang):
        self.tab, self.model_id, self.lang = ReasoningTab(models), model_id, lang
        gr.Markdown(t("r_intro"))
        self.comparison()
        self.evaluation()
        self.wire()

    def comparison(self) -> None:
        """One question in both modes, side by side; the recording until this visitor runs one."""
        d = SIDE_BY_SIDE
        with gr.Row():
            # the recorded comparison's question, in the page's language once that is known
            self.prompt = gr.Textbox(label=t("prompt"), value=prompt_of("en", "question"), lines=2, scale=3,
                                     elem_id="r-prompt", min_width=280)      # above the sliders on a phone
            self.budget = gr.Slider(8, 512, value=d.thinking_budget, step=8, label=t("thinking_budget"), scale=2,
                                    elem_id="r-budget")
            self.answer_tokens = gr.Slider(8, 256, value=d.answer_tokens, step=8, label=t("answer_tokens"), scale=2)
        gr.Examples(EXAMPLES, inputs=self.prompt, label=t("examples"))
        with gr.Row():
            self.run = gr.Button(t("run_both"), variant="primary", elem_id="r-run")
            self.stop = stop_button(t("stop"), "r-stop")      # clickable only while something runs
        first = recording_values("en")
        self.on_recording = gr.State(True)
        self.note = gr.Markdown(first[4], elem_id="r-note")
        with gr.Row(equal_height=False):
            with gr.Column():
                gr.Markdown(t("normal_head"))
                self.normal = gr.HTML(first[0], elem_id="r-normal")
            with gr.Column():
                gr.Markdown(t("reasoning_head"))
                self.reasoning = gr.HTML(first[1], elem_id="r-reasoning")
        self.table = gr.Dataframe(first[2], label=t("side_by_side"), interactive=False, elem_id="r-table")
        self.timeline = Plot(first[3], show_label=False, elem_id="r-timeline")

    def evaluation(self) -> None:
        """Accuracy against the thinking budget on the built-in questions; the recording until measured."""
        gr.Markdown(t("ttc_intro"))
        with gr.Row():
            self.budgets = gr.CheckboxGroup(CHOICES, value=list(BUDGETS), label=t("thinking_budgets"),
                                            elem_id="r-budgets")
            self.limit = gr.Slider(2, len(QUESTIONS), value=len(QUESTIONS), step=1, label=t("questions"))
            self.eval_btn = gr.Button(t("measure_accuracy"), elem_id="r-eval")
        self.eval_note = gr.Markdown(elem_id="r-eval-note")
        recorded_eval = recordings.evaluation()
        self.shown = gr.State(recorded_eval)      # the evaluation on show: the recording, then this visitor's
        chart, rows = ReasoningTab.eval_views(recorded_eval, "en")
        self.eval_plot = Plot(value=chart, show_label=False, elem_id="r-eval-plot")
        self.eval_table = gr.Dataframe(value=rows, label=t("per_budget"), interactive=False)
        self.eval_file = gr.File(label=t("export_json"), interactive=False,
                                 value=str(recordings.EVALUATION) if recorded_eval else None)

    @property
    def compared(self) -> list:
        return [self.normal, self.reasoning, self.table, self.timeline, self.note]

    def relabel(self, on, question, lang):
        """While the recording is on show, it and its question follow the page's language (a
        question the visitor typed stays)."""
        if not on:
            return [gr.skip()] * 6
        ours = question in {prompt_of(other, "question") for other in LANGS}
        return [*recording_values(lang), prompt_of(lang, "question") if ours else gr.skip()]

    def wire(self) -> None:
        tab, lang = self.tab, self.lang
        compared = while_running(closed_on_stop(on_gpu(tab.stream_both, for_tokens((1, 2))), tab.flags))
        both = gr.on([self.run.click, self.prompt.submit], compared,
                     [self.prompt, self.budget, self.answer_tokens, self.model_id, lang],
                     [*self.compared, self.on_recording, self.stop], **ENGINE, **PRIVATE)
        evaluation = self.eval_btn.click(
            while_running(closed_on_stop(on_gpu(tab.run_eval, 900), tab.flags)), [self.budgets, self.limit, self.model_id, lang],
            [self.shown, self.eval_plot, self.eval_table, self.eval_file, self.eval_note, self.stop], **ENGINE, **PRIVATE)
        stop_wiring(self.stop, tab.stop, [both, evaluation])
        # the page's language became known or changed: the evaluation's chart and table follow it,
        # and so does the recorded comparison while it is on show
        lang.change(ReasoningTab.eval_views, [self.shown, lang], [self.eval_plot, self.eval_table], queue=False,
                    **PRIVATE)
        lang.change(self.relabel, [self.on_recording, self.prompt, lang], [*self.compared, self.prompt],
                    queue=False, **PRIVATE)


def build(models, model_id, lang) -> ReasoningChapter:
    return ReasoningChapter(models, model_id, lang)
