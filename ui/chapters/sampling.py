"""8 · Sampling: temperature, top-k and top-p (and a seed) applied live to one step's stored
candidates with transformers' own warpers: before and after each stage, which tokens survive,
which one is drawn."""

from __future__ import annotations

import gradio as gr

from engine.run.request import PLAYGROUND
from engine.schema.trace import Trace
from viz import html
from viz.charts import sampling
from viz.charts.notice import notice_chart
from viz.text.labels import label

from ui.chapters.common import PRIVATE, chart_or_notice, clamp, intro, plot
from ui.host.models import torch_side
from ui.page.i18n import t


def sampling_view(trace: Trace, step, temperature, top_k, top_p, seed, lang: str) -> tuple:
    """(playground chart, survivors) of one step under the chosen knobs."""
    playground = torch_side("engine.run.sampling").playground    # the warpers are transformers' own
    if not trace.steps:
        return notice_chart(label("no_steps", lang)), ""
    step = clamp(step, len(trace.steps) - 1)
    try:
        rows = playground(trace.steps[step].candidates, float(temperature), int(top_k), float(top_p),
                          int(seed or 0))
    except (TypeError, ValueError) as exc:
        raise gr.Error(str(exc)) from None
    run = trace.steps[step]
    settings = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "step": step,
                # what the real run's sampling did at this step, over the whole vocabulary
                "real": {"temperature": trace.settings.temperature, "top_k": trace.settings.top_k,
                         "top_p": trace.settings.top_p, "kept": run.kept_tokens, "mass": run.kept_mass,
                         "forced": run.forced, "vocab": trace.model.vocab_size}}
    return (chart_or_notice(sampling.playground_chart, rows, lang=lang),
            html.survivors_html(rows, settings, lang=lang))


class Sampling:
    def __init__(self):
        intro(7)
        with gr.Row():
            self.step = gr.Slider(0, 1, value=0, step=1, label=t("decode_step"))
            self.temperature = gr.Slider(0, 3, value=PLAYGROUND.temperature, step=0.05, label=t("temperature"))
            self.top_k = gr.Slider(0, 50, value=PLAYGROUND.top_k, step=1, label=t("top_k_off"), elem_id="s-top-k")
            self.top_p = gr.Slider(0.01, 1, value=PLAYGROUND.top_p, step=0.01, label=t("top_p"))
            self.seed = gr.Number(value=PLAYGROUND.seed, precision=0, label=t("seed"), minimum=0)
        self.playground = plot("playground")
        self.survivors = gr.HTML(elem_id="survivors")

    @property
    def knobs(self) -> list:
        return [self.temperature, self.top_k, self.top_p, self.seed]

    @property
    def shown(self) -> list:
        """What `sampling_view` fills."""
        return [self.playground, self.survivors]

    @property
    def views(self) -> list:
        return [*self.shown, self.step]

    def draw(self, trace: Trace, step: int, knobs: tuple, lang: str) -> list:
        last = max(len(trace.steps) - 1, 0)
        return [*sampling_view(trace, step, *knobs, lang), gr.update(maximum=max(last, 1), value=step)]

    def wire(self, trace: gr.State, lang: gr.State) -> None:
        # the playground is light: its knobs redraw while they move; the step only when let go
        gr.on([self.step.release, *(k.input for k in self.knobs)],
              lambda tr, *a: sampling_view(tr, *a) if tr else gr.skip(), [trace, self.step, *self.knobs, lang],
              self.shown, trigger_mode="always_last", **PRIVATE)
