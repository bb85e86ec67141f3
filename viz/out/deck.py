"""The walkthrough as one self-contained HTML file: slides for a talk without network or server.

Pure assembly: the caller (ui/share/deck.py) picks each step's charts and text; this module writes the
page. Everything is inside the file: charts as inline SVG (vl-convert, viz/out/export.py), the styles,
the key handling. A Content-Security-Policy forbids any request (no font, image or script from a
host; a chart's link could not load either), so what opens from disk is what was written.

Keys: → / PageDown / Space / Enter next; ← / PageUp / Backspace back; Home / End; the slide is in
the address (#3), so a reload stays there. Presentation clickers send PageUp/PageDown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from markdown_it import MarkdownIt

from viz.out.export import inline_svg, slide

# No request may leave the file: styles and the script are inline, charts are inline SVG.
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; font-src data:")
CHART = (760, 440)         # a chart's drawing size (CSS scales it into its box)
_MD = MarkdownIt("commonmark", {"html": False}).disable("image")


@dataclass
class Slide:
    title: str
    lead: str = ""                      # one line under the title (markdown)
    text: str = ""                      # the narration (markdown)
    charts: list = field(default_factory=list)   # Altair charts or Vega-Lite specs, drawn as SVG
    fit: list[bool] = field(default_factory=list)  # per chart: fitted to CHART (False: its own size)
    extra: str = ""                     # markdown under the charts (a verdict, a quality line)
    numbers: list[tuple[str, str]] = field(default_factory=list)   # (name, value) measured in the run


def markdown(text: str) -> str:
    """Markdown as HTML, raw HTML in it escaped (a trace's text can hold anything)."""
    return _MD.render(text or "")


def _chart_svg(chart, fit: bool) -> str:
    return f'<figure class="chart">{inline_svg(slide(chart, CHART, big=True, fit=fit))}</figure>'


def _numbers(numbers: list[tuple[str, str]]) -> str:
    if not numbers:
        return ""
    cells = "".join(f'<div class="num"><span class="name">{escape(n)}</span><span class="value">{escape(v)}</span></div>'
                    for n, v in numbers)
    return f'<div class="numbers">{cells}</div>'


def slide_html(index: int, s: Slide, count: int, footer: str) -> str:
    charts = "".join(_chart_svg(c, s.fit[i] if i < len(s.fit) else True) for i, c in enumerate(s.charts))
    visual = (f'<div class="visual">{charts}{markdown(s.extra) if s.extra else ""}</div>'
              if charts or s.extra else "")
    layout = "split" if visual else "text-only"
    return (f'<section class="slide {layout}" id="slide-{index}" data-index="{index}" aria-label="{index + 1} / {count}">'
            f'<header><h1>{escape(s.title)}</h1>{markdown(s.lead) if s.lead else ""}</header>'
            f'<div class="body"><div class="words">{markdown(s.text)}{_numbers(s.numbers)}</div>{visual}</div>'
            f'<footer><span>{escape(footer)}</span><span class="count">{index + 1} / {count}</span></footer></section>')


def deck_html(slides: list[Slide], lang: str, title: str, footer: str, keys_hint: str) -> str:
    """The whole deck: one HTML document, nothing outside it."""
    body = "".join(slide_html(i, s, len(slides), footer) for i, s in enumerate(slides))
    return (f'<!doctype html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{escape(title)}</title><style>{STYLE}</style></head>'
            f'<body><main id="deck">{body}</main><div class="hint" id="hint">{escape(keys_hint)}</div>'
            f'<script>{SCRIPT}</script></body></html>\n')


# Type sized for a projector: in units of the viewport, so a 1280x720 projector and a 4K screen
# show the same slide; a slide is one screen, never scrolled in a talk.
STYLE = """
*{box-sizing:border-box}
html,body{margin:0;height:100%;background:#fff;color:#111;
 font-family:'Source Sans Pro','Noto Sans','Noto Sans CJK SC','PingFang SC','Microsoft YaHei',Arial,sans-serif}
.slide{display:none;position:fixed;inset:0;padding:3.2vh 3.5vw 2.5vh;flex-direction:column}
.slide.on{display:flex}
header h1{font-size:clamp(24px,3.3vw,64px);margin:0 0 .6vh;line-height:1.15}
header p{font-size:clamp(16px,1.75vw,34px);margin:0 0 1.4vh;color:#333}
.body{flex:1;display:flex;gap:2.5vw;min-height:0}
.words{flex:0 0 38%;font-size:clamp(15px,1.55vw,30px);line-height:1.4;overflow:hidden}
.text-only .words{flex:1;max-width:70vw;font-size:clamp(17px,2vw,38px)}
.words p{margin:0 0 1.2vh}
.words code,.visual code{font-size:.9em;background:#f1f2f5;padding:0 .2em;border-radius:3px}
.visual{flex:1;display:flex;flex-direction:column;gap:1.2vh;min-width:0;min-height:0;
 font-size:clamp(14px,1.35vw,26px)}
.chart{margin:0;flex:1;min-height:0;display:flex;justify-content:center}
.chart svg{width:100%;height:100%;max-height:100%}
.numbers{display:flex;flex-wrap:wrap;gap:.6vw;margin-top:1.2vh}
.num{background:#f4f6fa;border:1px solid #dde1e8;border-radius:6px;padding:.5vh .7vw;display:flex;flex-direction:column}
.num .name{font-size:.7em;color:#444}
.num .value{font-weight:700}
footer{display:flex;justify-content:space-between;font-size:clamp(11px,1vw,18px);color:#555;margin-top:1vh}
.hint{position:fixed;right:1vw;top:1vh;font-size:12px;color:#777;transition:opacity 1s}
.hint.gone{opacity:0}
@media print{.slide{display:flex;position:relative;page-break-after:always;height:100vh}.hint{display:none}}
"""

SCRIPT = """
(() => {
  const slides = [...document.querySelectorAll('.slide')];
  let at = 0;
  const show = (i) => {
    at = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach((s, k) => s.classList.toggle('on', k === at));
    if (location.hash !== '#' + (at + 1)) history.replaceState(null, '', '#' + (at + 1));
    document.body.dataset.slide = String(at);
  };
  document.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const next = ['ArrowRight', 'ArrowDown', 'PageDown', ' ', 'Enter'].includes(e.key);
    const back = ['ArrowLeft', 'ArrowUp', 'PageUp', 'Backspace'].includes(e.key);
    if (next) show(at + 1); else if (back) show(at - 1);
    else if (e.key === 'Home') show(0); else if (e.key === 'End') show(slides.length - 1);
    else return;
    e.preventDefault();
  });
  document.addEventListener('click', (e) => { if (!e.target.closest('a')) show(at + (e.clientX > innerWidth / 3 ? 1 : -1)); });
  const fromHash = parseInt(location.hash.slice(1), 10);
  show(Number.isFinite(fromHash) ? fromHash - 1 : 0);
  setTimeout(() => document.getElementById('hint').classList.add('gone'), 4000);
})();
"""
