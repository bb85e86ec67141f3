"""The walkthrough as an offline deck: which chart and which numbers each step's slide shows.

The walkthrough's own choices, from the run's traces ("next": the next-token example, "normal" and
"reasoning": chapter 7's question), the recorded lab and the catalogue's narration (en or zh);
viz/out/deck.py writes the file. The page's "Download the walkthrough" and `python -m engine deck`
(engine/commands/deck.py, which reaches this module by name: the engine imports no ui) both call
`deck_html`. Nothing here waits for the page's model: the sampling step's warpers are imported
directly (transformers, as the CLI has them), not through ui.models.torch_side.
"""

from __future__ import annotations

import importlib

from engine.schema.trace import Trace
from viz.charts import attention, decode, kv, speed
from viz.charts import lab as lab_viz
from viz.charts import reasoning as rviz
from viz.html.cards import speed_figures
from viz.out.deck import Slide, deck_html as write_deck
from viz.text.facts import fill
from viz.fmt import device_name, fmt_bytes, fmt_ms, fmt_p, fmt_rate
from viz.text.labels import label
from viz.charts.notice import notice_chart
from viz.charts.sampling import playground_chart
from viz.out.slides import chip_label, token_chips_chart

from viz.text import strings

from ui.chapters.reasoning import verdict_md
from ui.chapters.views import first_readable_step, least_sure_step
from ui.host import recordings
from ui.host.recordings import recorded
from ui.page.i18n import facts, text
from ui.walkthrough.tab import Walkthrough


def said(key: str, lang: str) -> str:
    """A catalogue text of the page (narration included) in `lang`, its facts filled as the page fills them."""
    return fill(text(key, lang), facts(lang))


def drawn(draw, *args, lang: str, **kwargs):
    """A chart, or a notice chart saying why it cannot be drawn (attention not captured, ...)."""
    try:
        return draw(*args, lang=lang, **kwargs)
    except ValueError as exc:
        return notice_chart(str(exc))


def model_name(trace: Trace) -> str:
    return trace.model.id.split(":")[-1].split("/")[-1]


def step_slide(i: int, traces: dict[str, Trace], lab: dict | None, lang: str) -> Slide:
    """Walkthrough step i as a slide: its title, introduction and narration, with the chart(s)
    the page's step shows and the run's own numbers for it."""
    s = Slide(title=said(f"wt_{i}_title", lang), lead=said(f"wt_{i}_intro", lang), text=said(f"wt_{i}_text", lang))
    example, normal, reasoning = traces["next"], traces["normal"], traces["reasoning"]
    prefill = example.prefill
    if i == 0:
        s.charts, s.fit = [token_chips_chart(example, lang)], [False]
        s.numbers = [(label("deck_prompt_chars", lang), f"{len(example.prompt.raw):,}"),
                     (label("deck_prompt_tokens", lang), f"{len(example.prompt.tokens):,}")]
    elif i == 1:
        s.charts = [drawn(attention.heatmap, example, example.model.layers // 2, None, lang=lang)]
        if prefill:
            s.numbers = [(label("deck_prompt_tokens", lang), f"{prefill.tokens:,}"),
                         (label("deck_prefill", lang), fmt_ms(prefill.ms)),
                         (label("tokens_per_s", lang), fmt_rate(prefill.tokens_per_s, lang))]
    elif i == 2:
        s.charts = [drawn(kv.kv_growth_chart, example, lang=lang)]
        if example.steps:
            s.numbers = [(label("deck_kv_first", lang), fmt_bytes(example.steps[0].kv_bytes)),
                         (label("deck_kv_last", lang, n=example.steps[-1].kv_tokens), fmt_bytes(example.steps[-1].kv_bytes))]
    elif i == 3 and example.steps:
        step = first_readable_step(example)
        chosen = example.steps[step]
        s.charts = [drawn(decode.candidates_chart, example, step, lang=lang, top=10)]
        s.extra = f"{label('deck_answer', lang)} {example.output_text}"
        s.numbers = [(label("deck_step", lang), str(step)), (label("chosen", lang), chip_label(chosen.token)),
                     (label("p_model", lang), fmt_p(chosen.chosen_p_model))]
    elif i == 4:
        s.charts = [drawn(speed.timeline_chart, example, lang=lang)]     # the cards' figures are its numbers
        s.numbers = [(name, value) for name, value, _, _ in speed_figures(example, lang)[0][:4]]
    elif i == 5 and lab:
        s.charts = [drawn(lab_viz.kv_chart, lab, lang=lang)]
        try:
            s.extra = lab_viz.quality_line(lab, lang)
        except ValueError:
            s.extra = ""
    elif i == 6:
        s.charts = [drawn(rviz.compare_timeline, normal, reasoning, lang=lang)]
        if normal.summary and reasoning.summary:
            s.extra = verdict_md(normal, reasoning, lang, brief=True)
            s.numbers = [(label("deck_tokens_of", lang, mode=label("mode_normal", lang)), str(len(normal.steps))),
                         (label("deck_tokens_of", lang, mode=label("mode_reasoning", lang)), str(len(reasoning.steps)))]
    elif i >= 8:        # a step added after these (the serving floor, the profile): the page's own visual
        views = Walkthrough(None, None).step_views(i, traces, lang, True)
        s.charts = [v for v in views if hasattr(v, "to_dict")]
        s.extra = "  \n".join(v for v in views if isinstance(v, str) and v)
    elif i == 7 and example.steps:
        sampling = importlib.import_module("engine.run.sampling")     # transformers' own warpers
        unsure = least_sure_step(example)
        rows = sampling.playground(example.steps[unsure].candidates, 1.0, 10, 0.9)
        s.charts = [drawn(playground_chart, rows[:10], lang=lang, width=150)]
        s.numbers = [(label("deck_step", lang), str(unsure))]
    return s


def cover(example: Trace, lang: str, source: str) -> Slide:
    """The first slide: what the deck is, the prompt, the model and where and when it ran."""
    words = label("deck_cover", lang, model=model_name(example), device=device_name(example.model.device),
                  date=example.created[:10], source=source)
    rows = speed_figures(example, lang)[0][:4] if example.summary else []
    return Slide(title=label("deck_title", lang), lead=words,
                 text=f"**{label('deck_prompt', lang)}** {example.prompt.raw}",
                 numbers=[(name, value) for name, value, _, _ in rows])


def deck_html(traces: dict[str, Trace] | None, lang: str, live: bool = False) -> str:
    """The deck for `traces` (None: the walkthrough's recordings in `lang`); a missing "normal" or
    "reasoning" is taken from the recording (the reasoning step then shows the recorded comparison)."""
    lang = "zh" if lang == "zh" else "en"
    chosen = {**recorded(lang), **(traces or {})}
    example = chosen["next"]
    source = label("deck_source_live" if live else "deck_source_recorded", lang)
    slides = [cover(example, lang, source), *(step_slide(i, chosen, recordings.lab(), lang) for i in range(len(strings.walkthrough()["steps"])))]
    footer = label("deck_footer", lang, model=model_name(example), device=device_name(example.model.device),
                   date=example.created[:10])
    return write_deck(slides, lang, label("deck_title", lang), footer, label("deck_keys", lang))
