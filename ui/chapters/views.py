"""Trace + the visitor's selections -> values for the page's components, one function per chapter.

Every function is cheap enough to call on each control change, and never raises for a trace that
lacks something (attention off, logit lens off, a trace from another model): it shows why instead.
"""

from __future__ import annotations

import gradio as gr

from engine.schema.specs import kv_projection
from engine.schema.trace import Trace
from viz.charts import attention, decode, kv, sampling, speed
from viz import html
from viz.fmt import HEX_FRAGMENT
from viz.text.labels import label
from viz.charts.notice import notice_chart

from ui.host.models import torch_side

AVERAGE = "average"


def head_choices(heads: int, lang: str = "en") -> list[tuple[str, str]]:
    """The head dropdown's (shown label, value) pairs: the mean of all heads, then each head."""
    return [(label("all_heads_mean", lang), AVERAGE)] + [(str(h), str(h)) for h in range(heads)]


def head_index(choice: str | None) -> int | None:
    return None if choice in (None, "", AVERAGE) else int(choice)


def clamp(value, top: int) -> int:
    try:
        return max(0, min(int(value or 0), top))
    except (TypeError, ValueError):
        return 0


# A step is drawn on first view only if its candidates read as text: at least this share of the
# probability of its top candidates is on whole characters or words, not on byte pieces (<E5>).
READABLE_SHARE, READABLE_TOP = 0.5, 10


def readable_step(step) -> bool:
    """Whether a step reads as text: its token is a whole character or word (not white space), and
    most of its top candidates' probability is on whole ones (a Chinese character is often two or
    three byte pieces, each a step of its own whose candidates are pieces too)."""
    if HEX_FRAGMENT.fullmatch(step.token) or not step.token.strip():
        return False
    top = step.candidates[:READABLE_TOP]
    total = sum(c.p_model for c in top)
    whole = sum(c.p_model for c in top if not HEX_FRAGMENT.fullmatch(c.text))
    return total <= 0 or whole >= READABLE_SHARE * total


def first_readable_step(trace: Trace) -> int:
    """The first step that reads as text (readable_step), else step 0."""
    return next((s.index for s in trace.steps if readable_step(s)), 0)


def least_sure_step(trace: Trace) -> int:
    """The step where the model's own distribution had the most entropy, where sampling matters
    most: among the steps that read as text when there are any (readable_step)."""
    readable = [i for i, s in enumerate(trace.steps) if readable_step(s)] or range(len(trace.steps))
    return max(readable, key=lambda i: trace.steps[i].entropy_model, default=0)


def whole_word(tokens: list, i: int) -> bool:
    """Whether prompt token `i` is a word by itself: not a byte piece of a character, not a
    special token, letters only, and (for scripts with spaces) neither the start nor the end of a
    longer word ("X" + "iao" is not). A Chinese or Japanese character is a word by itself."""
    token = tokens[i]
    word = token.text.strip()
    if token.fragment or token.special or not word.isalpha():
        return False
    if any(ord(c) >= 0x2E80 for c in word):        # CJK: no spaces between words
        return True
    before = tokens[i - 1].text if i > 0 else " "
    after = tokens[i + 1].text if i + 1 < len(tokens) else " "
    return (token.text[:1].isspace() or not before[-1:].isalnum()) and not after[:1].isalnum()


def chart_or_notice(draw, *args, lang: str, **kwargs):
    """A chart, or a notice saying why it cannot be drawn (e.g. attention was not captured)."""
    try:
        return draw(*args, lang=lang, **kwargs)
    except ValueError as exc:
        return notice_chart(str(exc))


# --- 1 Tokens -------------------------------------------------------------------------------
def tokens_view(trace: Trace, comparison: tuple | None, selected: int | None, lang: str):
    """Token chips of the templated prompt, and the raw prompt under two tokenizers side by side.
    comparison: (our tokens, our name, other tokens, other name) for the raw prompt."""
    return (html.prompt_html(trace, selected, lang=lang),
            html.compare_html(*comparison, lang=lang) if comparison else "")


# --- 2 Prefill ------------------------------------------------------------------------------
def prefill_view(trace: Trace, layer, head, query, lang: str):
    p = trace.prefill
    facts = (f"**{p.tokens}** {label('prompt_tokens', lang)} · **{p.ms:.0f} ms** "
             f"{label('one_forward_pass', lang)} · **{p.tokens_per_s:,.0f}** {label('tokens_per_s', lang)}"
             if p else "")
    layer = clamp(layer, trace.model.layers - 1)
    return (facts, chart_or_notice(attention.heatmap, trace, layer, head_index(head), lang=lang),
            chart_or_notice(attention.head_view, trace, layer, head_index(head), clamp(query, _mapped(trace) - 1),
                   lang=lang))


def _mapped(trace: Trace) -> int:
    return trace.attention.prefill_tokens if trace.attention else len(trace.prompt.tokens)


# --- 3 KV cache -----------------------------------------------------------------------------
def kv_view(trace: Trace, lang: str):
    rows = kv_projection(trace.model)
    return (chart_or_notice(kv.kv_growth_chart, trace, lang=lang), chart_or_notice(kv.projection_chart, rows, lang=lang),
            kv.projection_table(rows, lang=lang))


# --- 4 Decode -------------------------------------------------------------------------------
def decode_view(trace: Trace, step, layer, head, lang: str):
    if not trace.steps:
        empty = notice_chart(label("no_steps", lang))
        return "", empty, empty, empty
    step = clamp(step, len(trace.steps) - 1)
    layer = clamp(layer, trace.model.layers - 1)
    return (html.step_html(trace, step, lang=lang), chart_or_notice(decode.candidates_chart, trace, step, lang=lang),
            chart_or_notice(attention.attention_row, trace, step, layer, head_index(head), lang=lang),
            chart_or_notice(decode.lens_chart, trace, step, lang=lang))


# --- 5 Speed --------------------------------------------------------------------------------
def speed_view(trace: Trace, lang: str):
    return (html.speed_html(trace, lang=lang), chart_or_notice(speed.timeline_chart, trace, lang=lang),
            chart_or_notice(speed.step_times_chart, trace, lang=lang))


# --- 8 Sampling -----------------------------------------------------------------------------
def sampling_view(trace: Trace, step, temperature, top_k, top_p, seed, lang: str):
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
