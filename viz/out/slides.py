"""The page's HTML cards as charts, so they can be images without a browser.

The speed cards and the token chips are HTML on the page (viz/html/cards.py, viz/html/chips.py). A slide
or a paper wants them as a picture; rendering HTML needs a browser, and the server has none. So the
same figures are drawn here as a Vega-Lite chart of rectangles and text at pixel positions
(`scale: null`), which vl-convert turns into SVG or PNG like any other chart (viz/out/export.py). The
figures come from the same functions the HTML uses (cards.speed_figures, the trace's own tokens),
so the picture and the page never disagree.
"""

from __future__ import annotations

import unicodedata

import altair as alt
import pandas as pd

from engine.schema.trace import Branch, Trace

from viz.html.branch_cards import branch_speed_figures
from viz.html.cards import speed_figures
from viz.html.chips import PALETTE, token_groups
from viz.fmt import HEX_FRAGMENT, WHITESPACE_SIGNS, device_name, visible
from viz.text.labels import label
from viz.charts.theme import FONT, INK, MONO

WIDTH = 1200                  # the drawing's width in px (a 16:9 slide is 1280 wide with margins)


def text_width(text: str, size: float) -> float:
    """About how wide `text` is at font size `size`: wide (CJK) characters a whole em, others ~0.58."""
    return sum(size if unicodedata.east_asian_width(c) in "WF" else 0.58 * size for c in text)


def wrap(text: str, size: float, width: float) -> list[str]:
    """`text` in lines no wider than `width` (words kept whole where there are spaces, CJK by character)."""
    lines, line = [], ""
    for piece in _pieces(text):
        if line and text_width((line + piece).rstrip(), size) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    return [*lines, line.rstrip()] if line.strip() else lines


def _pieces(text: str) -> list[str]:
    """Words with their following space, and each wide character on its own."""
    out, word = [], ""
    for c in text:
        if unicodedata.east_asian_width(c) in "WF":
            if word:
                out.append(word)
                word = ""
            out.append(c)
        else:
            word += c
            if c == " ":
                out.append(word)
                word = ""
    return out + ([word] if word else [])


def _chart(rects: list[dict], texts: list[dict], height: float, title: str, subtitle: str) -> alt.LayerChart:
    """Rectangles (x, y, x2, y2, fill) and texts (x, y, text, size, weight, font, color) at pixels."""
    px = {"scale": None}
    box = alt.Chart(pd.DataFrame(rects or [{"x": 0, "y": 0, "x2": 0, "y2": 0, "fill": "#fff"}])).mark_rect(
        cornerRadius=6, stroke="#d5d9e0").encode(
        x=alt.X("x:Q", **px, axis=None), x2="x2:Q", y=alt.Y("y:Q", **px, axis=None), y2="y2:Q",
        fill=alt.Fill("fill:N", scale=None))
    layers = [box]
    # a mark's font and weight are fixed (no encoding channel for them): a layer for each pair
    for font, weight in dict.fromkeys((t["font"], t["weight"]) for t in texts):
        rows = [t for t in texts if (t["font"], t["weight"]) == (font, weight)]
        layers.append(alt.Chart(pd.DataFrame(rows)).mark_text(
            align="left", baseline="top", font=font, fontWeight=weight).encode(
            x=alt.X("x:Q", **px, axis=None), y=alt.Y("y:Q", **px, axis=None), text="text:N",
            size=alt.Size("size:Q", scale=None, legend=None), color=alt.Color("color:N", scale=None)))
    return alt.layer(*layers).properties(
        width=WIDTH, height=height, title=alt.Title(title, subtitle=subtitle or alt.Undefined))


def speed_cards_chart(trace: Trace, lang: str = "en", branch: Branch | None = None) -> alt.LayerChart:
    """The speed cards (TTFT, TPOT, end-to-end, tokens/s, prefill, ...) as a picture: the figures,
    their definitions and the line under them, as speed_html shows them (`branch`: as
    branch_speed_html shows a branch on show)."""
    figures, foot = speed_figures(trace, lang) if branch is None else branch_speed_figures(trace, branch, lang)
    columns, gap, pad = 4, 16, 14
    card_w = (WIDTH - gap * (columns - 1)) / columns
    rects, texts, y = [], [], 0.0
    for row_start in range(0, len(figures), columns):
        row = figures[row_start:row_start + columns]
        blocks = []
        for k, (name, value, definition, note) in enumerate(row):
            x = k * (card_w + gap)
            lines = wrap(definition, 15, card_w - 2 * pad)       # every line: the row grows to hold them
            blocks.append((x, name, value + (f" ({note})" if note else ""), lines))
        height = pad * 2 + 22 + 40 + 20 * max(len(b[3]) for b in blocks)
        for x, name, value, lines in blocks:
            rects.append({"x": x, "y": y, "x2": x + card_w, "y2": y + height, "fill": "#f6f7f9"})
            texts.append(_text(x + pad, y + pad, name, 16, "normal", "#555b66"))
            value_size = 30 if text_width(value, 30) < card_w - 2 * pad else 22
            texts.append(_text(x + pad, y + pad + 22, value, value_size, "bold", INK))
            texts += [_text(x + pad, y + pad + 62 + 20 * i, line, 15, "normal", "#444a55")
                      for i, line in enumerate(lines)]
        y += height + gap
    under = wrap(foot, 15, WIDTH)
    texts += [_text(0, y + 20 * i, line, 15, "normal", "#555b66") for i, line in enumerate(under)]
    model = trace.model.id.split(":")[-1].split("/")[-1]
    subtitle = label("slide_speed_subtitle", lang, model=model, device=device_name(trace.model.device),
                     date=trace.created[:10])
    return _chart(rects, texts, y + 20 * len(under), label("slide_speed_title", lang), subtitle)


def chip_label(text: str) -> str:
    """A token's text as its chip shows it: whitespace as signs, byte pieces as their hex."""
    if text == "":
        return "∅"
    if HEX_FRAGMENT.fullmatch(text):
        return text
    return "".join(WHITESPACE_SIGNS.get(c) or visible(c) for c in text)


def token_chips_chart(trace: Trace, lang: str = "en", selected: int | None = None) -> alt.LayerChart:
    """The prompt as the model reads it: one chip per token (its text, its id under it), in the
    page's colours, wrapped into lines; special tokens dark; byte pieces of a character sit in a
    box under the character they form, as on the page (viz/html/chips.py)."""
    prompt = trace.prompt
    tokens, chars = prompt.tokens, prompt.templated
    size, id_size, gap, pad = 20, 13, 6, 8
    chip_h = size + id_size + 2 * pad + 4
    head = size + 10                       # a group's characters above its pieces
    line_h = chip_h + head
    rects, texts, x, y = [], [], 0.0, 0.0

    def chip_width(i: int) -> float:
        return max(text_width(chip_label(tokens[i].text), size), text_width(str(tokens[i].id), id_size)) + 2 * pad

    for members, char_idx in token_groups(tokens):
        grouped = len(members) > 1 or tokens[members[0]].fragment
        shown = chip_label("".join(chars[c] for c in char_idx)) if grouped else ""
        w = sum(chip_width(i) for i in members) + gap * (len(members) - 1)
        w = max(w + (8 if grouped else 0), text_width(shown, size) + 2 * pad)
        if x and x + w > WIDTH:
            x, y = 0.0, y + line_h + gap
        if grouped:
            rects.append({"x": x, "y": y, "x2": x + w, "y2": y + line_h, "fill": "#eef0f4"})
            texts.append(_text(x + pad, y + 4, shown, size, "bold", INK))
        cx = x + (4 if grouped else 0)
        for i in members:
            tok, cw = tokens[i], chip_width(i)
            fill = "#3b4150" if tok.special else ("#ffe08a" if i == selected else PALETTE[i % len(PALETTE)])
            top = y + head
            rects.append({"x": cx, "y": top - (4 if grouped else 0), "x2": cx + cw,
                          "y2": top + chip_h - (8 if grouped else 0), "fill": fill})
            texts.append({**_text(cx + pad, top + pad - 4, chip_label(tok.text), size, "normal",
                                  "#ffffff" if tok.special else INK), "font": MONO if tok.fragment else FONT})
            texts.append(_text(cx + pad, top + pad + size - 2, str(tok.id), id_size, "normal",
                               "#d5d9e0" if tok.special else "#555b66"))
            cx += cw + gap
        x += w + gap
        if char_idx and chars[char_idx[-1]] == "\n":       # a line ends here, as on the page
            x, y = 0.0, y + line_h + gap
    model = trace.model.id.split(":")[-1].split("/")[-1]
    title = label("slide_tokens_title", lang, n=len(tokens))
    subtitle = label("slide_tokens_subtitle", lang, model=model, n=f"{trace.model.vocab_size:,}")
    return _chart(rects, texts, y + line_h, title, subtitle)


def _text(x: float, y: float, text: str, size: float, weight: str, color: str) -> dict:
    return {"x": x, "y": y, "text": text, "size": size, "weight": weight, "color": color, "font": FONT}
