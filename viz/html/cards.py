"""Fact cards as HTML: nearest embedding neighbours, one decode step, and the speed figures.

Numbers are the measured ones from the trace, formatted by viz.fmt; every trace text is escaped.
"""

from __future__ import annotations

import re

from engine.schema.trace import Trace

from viz.html.chips import chip_text, stop_text
from viz.fmt import esc, fmt_bytes, fmt_ms, fmt_nats, fmt_p, fmt_rate, visible
from viz.frames import step_of
from viz.text.labels import label
from viz.text import verdicts


def _facts(rows: list[tuple[str, str]]) -> str:
    """A two-column table; values are HTML that the caller already escaped."""
    body = "".join(f"<tr><th>{esc(name)}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<table class="tbt-facts">{body}</table>'


def _token(text: str, token_id: int, lang: str) -> str:
    return (f'<span class="tbt-tok" title="{esc(text)}">{chip_text(text)}</span> '
            f'<span class="tbt-muted">{esc(label("token_id", lang))} {int(token_id)}</span>')


def neighbors_html(token: dict, neighbors: list[dict], lang: str = "en") -> str:
    """token = {"id", "text"}; neighbors = [{"id", "text", "cosine"}], nearest first."""
    title = label("neighbors_title", lang, token=f"“{visible(str(token['text']))}” ({label('token_id', lang)} {int(token['id'])})")
    rows = "".join(
        f'<tr><td class="tbt-num">{rank}</td><td>{_token(str(n["text"]), n["id"], lang)}</td>'
        f'<td class="tbt-num">{float(n["cosine"]):.3f}</td><td class="tbt-barcell"><span class="tbt-bar" '
        f'style="width:{max(0.0, min(1.0, float(n["cosine"]))) * 100:.0f}%"></span></td></tr>'
        for rank, n in enumerate(neighbors, start=1))
    head = (f'<tr><th>{esc(label("rank", lang))}</th><th>{esc(label("token", lang))}</th>'
            f'<th colspan="2">{esc(label("cosine", lang))}</th></tr>')
    return (f'<div class="tbt tbt-neighbors"><div class="tbt-card-title">{esc(title)}</div>'
            f'<table class="tbt-table">{head}{rows}</table></div>')


def step_html(trace: Trace, step: int, lang: str = "en") -> str:
    """The facts of one decode step: what was chosen, how sure the model was, what it cost."""
    s = step_of(trace, step, lang)
    phase = label("phase_thinking" if s.phase == "thinking" else "phase_answer", lang)
    if s.forced:
        phase += " · " + label("phase_forced", lang)
    if trace.served:
        return _served_step(trace, s, phase, lang)
    rows = [
        (label("chosen", lang), _token(s.token, s.id, lang)),
        (label("phase", lang), esc(phase)),
        (label("rank_of", lang), f"{s.chosen_rank + 1}"),
        (label("p_model", lang), esc(fmt_p(s.chosen_p_model))),
        (label("p_final", lang), esc(fmt_p(s.chosen_p_final))),
        (label("entropy_final_nats", lang), esc(fmt_nats(s.entropy, lang))),
        (label("entropy_model_nats", lang), esc(fmt_nats(s.entropy_model, lang))),
        (label("step_ms", lang), esc(fmt_ms(s.ms))),
        (label("forward_ms", lang), esc(fmt_ms(s.forward_ms))),
        (label("watch_cost", lang), esc(fmt_ms(s.observe_ms))),
        (label("kv_tokens", lang), f"{s.kv_tokens:,}"),
        (label("kv_bytes", lang), esc(fmt_bytes(s.kv_bytes))),
    ]
    return (f'<div class="tbt tbt-step-card" data-step="{s.index}"><div class="tbt-card-title">'
            f'{esc(label("step_title", lang, step=s.index))}</div>{_facts(rows)}'
            f'<div class="tbt-legend">{esc(label("step_note", lang, n=f"{trace.model.vocab_size:,}"))}</div></div>')


def _served_step(trace: Trace, s, phase: str, lang: str) -> str:
    """A step as the server reported it: the token, its logprob, its rank among the alternatives the
    server listed; times are the gaps between chunks seen here. No pass, cache or watching cost."""
    rows = [
        (label("chosen", lang), _token(s.token, s.id, lang)),
        (label("phase", lang), esc(phase)),
        (label("rank_served", lang, k=len(s.candidates)), f"{s.chosen_rank + 1}" if s.chosen_rank < len(s.candidates)
         else esc(label("rank_beyond", lang, k=len(s.candidates)))),
        (label("p_served", lang), esc(fmt_p(s.chosen_p_model))),
        (label("entropy_served", lang, k=len(s.candidates)), esc(fmt_nats(s.entropy_model, lang))),
        (label("gap_ms", lang), esc(fmt_ms(s.ms))),
        (label("kv_tokens", lang), f"{s.kv_tokens:,}"),
    ]
    return (f'<div class="tbt tbt-step-card" data-step="{s.index}"><div class="tbt-card-title">'
            f'{esc(label("step_title", lang, step=s.index))}</div>{_facts(rows)}'
            f'<div class="tbt-legend">{esc(label("step_note_served", lang, server=trace.served.endpoint))}</div></div>')


NUMBER = re.compile(r"(?<![A-Za-z\d])(\d[\d,.]*)")     # a figure, not the 95 of "p95"
CARD_COLUMNS = 12         # the card grid's columns: each card spans 12 / (cards in its row)
ROW_MOST = {"wide": 4, "mid": 3, "narrow": 1}      # cards in a row, by the grid's width (viz/html/css.py)


def quantity_html(value: str) -> str:
    """A card's figure: each "number unit" part kept on one line, its words (the unit, "p95",
    "per step") smaller than its numbers; a line may break only between parts (" · ")."""
    parts = []
    for part in value.split(" · "):
        pieces = NUMBER.split(part)        # text, number, text, number, ..., text
        body = "".join(esc(piece) if k % 2 else f'<span class="tbt-unit">{esc(piece)}</span>'
                       for k, piece in enumerate(pieces) if piece)
        parts.append(f'<span class="tbt-qty">{body if NUMBER.search(part) else esc(part)}</span>')
    return " · ".join(parts)


def balanced_rows(n: int, most: int) -> list[int]:
    """How many of `n` cards go in each row when a row holds at most `most`: as even as can be,
    fuller rows first (7 in rows of 4: 4 + 3, never 6 + 1)."""
    rows = -(-n // most) if n else 0
    fewer, extra = divmod(n, rows) if rows else (0, 0)
    return [fewer + 1] * extra + [fewer] * (rows - extra)


def cards_grid(cards: list[str], compact: bool = False) -> str:
    """The cards in a grid whose rows are balanced at every width (no card left alone in its row
    while another row has room): each card carries its column span for each width class, the
    stylesheet picks the class from the grid's own width (a container query). `compact`: one row."""
    spans = {width: [CARD_COLUMNS // k for k in balanced_rows(len(cards), most) for _ in range(k)]
             for width, most in ROW_MOST.items()}
    out = []
    for i, card in enumerate(cards):
        style = ";".join(f"--span-{width}:{spans[width][i]}" for width in ROW_MOST)
        out.append(card.replace('<div class="tbt-card">', f'<div class="tbt-card" style="{style}">', 1))
    return f'<div class="tbt-cards{" tbt-cards-row" if compact else ""}">{"".join(out)}</div>'


def _card(name: str, value: str, definition: str, note: str = "") -> str:
    note = f'<span class="tbt-muted"> {esc(note)}</span>' if note else ""
    return (f'<div class="tbt-card"><div class="tbt-card-name">{esc(name)}</div>'
            f'<div class="tbt-card-value">{quantity_html(value)}{note}</div>'
            f'<div class="tbt-card-def">{esc(definition)}</div></div>')


def watch_figure(trace: Trace, lang: str = "en") -> tuple[str, str, str, str]:
    """The cost of watching, per step, kept apart from the model's own times (a card of the speed cards)."""
    steps = trace.steps
    if trace.schema.endswith("@1"):
        return label("watch_cost", lang), "—", label("def_watch_cost", lang), label("watch_unknown", lang)
    per_step = sum(s.observe_ms for s in steps) / len(steps) if steps else None
    value = label("watch_per_step", lang, ms=fmt_ms(per_step)) if per_step is not None else fmt_ms(None)
    return label("watch_cost", lang), value, label("def_watch_cost", lang), ""


def speed_html(trace: Trace, lang: str = "en", compact: bool = False) -> str:
    """Cards for TTFT, TPOT, end-to-end, tokens/s and prefill, each with its definition; `compact`
    keeps the first four in one row (a projector's walkthrough step).

    While the run is going (summary None) TTFT and TPOT are computed from the steps so far.
    """
    if trace.served:
        return served_speed_html(trace, lang, compact)
    figures, foot = speed_figures(trace, lang, compact)
    cards = [_card(*f) for f in figures]
    return f'<div class="tbt tbt-speed">{cards_grid(cards, compact)}<div class="tbt-legend">{esc(foot)}</div></div>'


def speed_figures(trace: Trace, lang: str = "en", compact: bool = False) -> tuple[list[tuple[str, str, str, str]], str]:
    """The speed cards' figures, (name, value, definition, note) each, and the line under them:
    what speed_html draws as HTML and viz/out/slides.py as a chart (an image without a browser)."""
    if trace.served:
        return served_speed_figures(trace, lang, compact)
    summary, steps, prefill = trace.summary, trace.steps, trace.prefill
    running = summary is None
    ttft = summary.ttft_ms if summary else (steps[0].t_ms if steps else None)
    if summary:
        tpot, e2e, rate = summary.tpot_ms, summary.e2e_ms, summary.tokens_per_s
    else:
        tpot = (steps[-1].t_ms - steps[0].t_ms) / (len(steps) - 1) if len(steps) > 1 else None
        e2e = rate = None
    tpot_note = label("so_far", lang) if running and tpot is not None else (
        label("tpot_needs_two", lang) if tpot is None else "")
    n_prompt = prefill.tokens if prefill else len(trace.prompt.tokens)
    cards = [
        (label("ttft", lang), fmt_ms(ttft), label("def_ttft", lang), ""),
        (label("tpot", lang), fmt_ms(tpot), label("def_tpot", lang), tpot_note),
        (label("e2e", lang), fmt_ms(e2e) if not running else label("running", lang), label("def_e2e", lang), ""),
        (label("tokens_per_s", lang), fmt_rate(rate, lang), label("def_rate", lang), ""),
        (label("prefill_ms", lang), fmt_ms(prefill.ms if prefill else None), label("def_prefill", lang, n=n_prompt), ""),
        (label("prefill_rate", lang), fmt_rate(prefill.tokens_per_s if prefill else None, lang),
         verdicts.prefill_rate(prefill.tokens_per_s if prefill else None, tpot, lang), ""),   # vs decoding, measured
    ]
    if summary and summary.time_to_first_answer_ms is not None and trace.reasoning is not None:
        cards.append((label("ttfa", lang), fmt_ms(summary.time_to_first_answer_ms), label("def_ttfa", lang), ""))
    cards.append(watch_figure(trace, lang))
    if compact:
        cards = cards[:4]
    foot = label("running", lang) if running else (label("new_tokens", lang, n=summary.new_tokens) + " · "
                                 + stop_text(summary.stop_reason, lang))
    if summary and summary.wall_ms is not None and not compact:
        foot += " · " + label("watch_wall", lang, wall=fmt_ms(summary.wall_ms), model=fmt_ms(summary.e2e_ms),
                              observe=fmt_ms(summary.observe_ms), wait=fmt_ms(summary.wait_ms))
    return cards, foot


def served_speed_html(trace: Trace, lang: str = "en", compact: bool = False) -> str:
    """A served run's times as its client saw them, with vLLM's serving-benchmark definitions:
    TTFT, TPOT, ITL (median and p95 of the gaps between chunks) and E2EL."""
    figures, foot = served_speed_figures(trace, lang, compact)
    cards = [_card(*f) for f in figures]
    return f'<div class="tbt tbt-speed">{cards_grid(cards, compact)}<div class="tbt-legend">{esc(foot)}</div></div>'


def served_speed_figures(trace: Trace, lang: str = "en", compact: bool = False) -> tuple[list[tuple], str]:
    summary, steps, served = trace.summary, trace.steps, trace.served
    running = summary is None
    ttft = summary.ttft_ms if summary else (steps[0].t_ms if steps else None)
    gaps = sorted(served.itl_ms) or sorted(s.ms for s in steps[1:] if s.ms > 0)
    p50 = gaps[len(gaps) // 2] if gaps else None
    p95 = gaps[min(len(gaps) - 1, int(0.95 * len(gaps)))] if gaps else None
    cards = [
        (label("ttft", lang), fmt_ms(ttft), label("def_ttft_served", lang), ""),
        (label("tpot", lang), fmt_ms(summary.tpot_ms if summary else None), label("def_tpot", lang),
         "" if summary and summary.tpot_ms is not None else label("so_far", lang) if running else ""),
        (label("e2el", lang), fmt_ms(summary.e2e_ms) if summary else label("running", lang), label("def_e2el", lang), ""),
        (label("tokens_per_s", lang), fmt_rate(summary.tokens_per_s if summary else None, lang), label("def_rate", lang), ""),
        (label("itl", lang), f"{fmt_ms(p50)} · p95 {fmt_ms(p95)}", label("def_itl", lang), ""),
    ]
    if compact:
        cards = cards[:4]
    foot = label("served_by", lang, endpoint=served.endpoint, api=served.api, model=served.model, chunks=served.chunks)
    if summary:
        foot += " · " + label("new_tokens", lang, n=summary.new_tokens) + " · " + stop_text(summary.stop_reason, lang)
    return cards, foot
