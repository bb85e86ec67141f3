"""The walkthrough as an offline deck: a cover, then one slide per walkthrough step.

Each slide shows what its step shows on the page (the step table, ui/walkthrough/steps.py: the same
charts from the same traces, "next": the next-token example, "normal" and "reasoning": chapter 7's
question), the catalogue's narration (en or zh) and the run's own numbers for the step; viz/out/deck.py
writes the file. The page's "Download the walkthrough" and `python -m engine deck`
(engine/commands/deck.py, which reaches this module by name: the engine imports no ui) both call
`deck_html`.
"""

from __future__ import annotations

from engine.errors import InvalidRequest
from engine.schema.trace import Trace
from viz.html.cards import speed_figures
from viz.out.deck import Slide, deck_html as write_deck
from viz.text.facts import fill
from viz.fmt import device_name
from viz.text.labels import label
from viz.text.strings import LANGS

from ui.host.recordings import recorded
from ui.page.i18n import facts, text
from ui.walkthrough.steps import STEPS, BOX_WIDTH, Draw


def said(key: str, lang: str) -> str:
    """A catalogue text of the page (narration included) in `lang`, its facts filled as the page fills them."""
    return fill(text(key, lang), facts(lang))


def model_name(trace: Trace) -> str:
    return trace.model.id.split(":")[-1].split("/")[-1]


# the walkthrough's steps drawn from the next-token run alone (the others draw chapter 7's pair, or the
# recorded lab, serving floor and profile)
RUN_CHAPTERS = ("tokens", "prefill", "kv", "decode", "speed", "sampling")


def own_steps(traces: dict[str, Trace]) -> list[int]:
    """The steps a deck of the visitor's own runs (`traces`) shows: only those drawn from those runs,
    so no slide carries a recording's words or numbers (chapter 7's needs both of its runs)."""
    pair = "normal" in traces and "reasoning" in traces
    return [i for i, st in enumerate(STEPS) if st.chapter in RUN_CHAPTERS or (pair and st.chapter == "reasoning")]


def step_slide(i: int, traces: dict[str, Trace], lang: str, live: bool = False) -> Slide:
    """Walkthrough step i as a slide: its title, introduction and narration, the chart(s) its page
    step shows (or the slide's own picture where the page shows HTML), the Markdown under them and
    the run's own numbers for it. `live`: a visitor's run, whose slides say only what that run
    measured (the narration tells the recording's example and quotes its figures: left out)."""
    step = STEPS[i]
    d = Draw(traces, lang, True, (BOX_WIDTH, step.height))
    s = Slide(title=said(f"wt_{i}_title", lang), lead=said(f"wt_{i}_intro", lang),
              text="" if live else said(f"wt_{i}_text", lang))
    if step.slide is not None:
        s.charts, s.fit = step.slide(d), [False]          # a picture drawn in pixels, not fitted
    else:
        values = step.draw(d)
        s.charts = [v for part, v in zip(step.parts, values) if part.kind == "plot" and hasattr(v, "to_dict")]
        s.extra = "  \n".join(v for part, v in zip(step.parts, values) if part.kind == "md" and v)
    s.extra = "  \n".join(x for x in (s.extra, step.slide_extra(d) if d.example.steps else "") if x)
    s.numbers = step.numbers(d)
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
    """The deck for `traces` (None: the walkthrough's recordings in `lang`). `live` (a visitor's own
    runs): only the steps drawn from those runs, without the recording's narration; otherwise a
    missing "normal" or "reasoning" is taken from the recording."""
    if lang not in LANGS:
        raise InvalidRequest(f"the deck speaks {', '.join(LANGS)}, not {lang[:20]!r}")
    chosen = {**recorded(lang), **(traces or {})}
    example = chosen["next"]
    source = label("deck_source_live" if live else "deck_source_recorded", lang)
    steps = own_steps(traces or {}) if live else range(len(STEPS))
    slides = [cover(example, lang, source), *(step_slide(i, chosen, lang, live) for i in steps)]
    footer = label("deck_footer", lang, model=model_name(example), device=device_name(example.model.device),
                   date=example.created[:10])
    return write_deck(slides, lang, label("deck_title", lang), footer, label("deck_keys", lang))
