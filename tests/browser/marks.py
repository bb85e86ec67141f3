"""The marks a chart's spec declares, and the marks the page drew.

The page draws each gr.Plot with Gradio's own Vega-Lite and vega-embed, on a canvas, so the drawn marks
cannot be read from the DOM. `expose_views` lets the page's plot component keep the Vega view it made
(a one-line patch to that component's script, as the browser loads it); `drawn` walks each view's
scenegraph and counts, for every data mark (bars, ticks, points, text, ...), the items that show:
finite position, some opacity, some paint. `declared` counts the same from the same spec rendered by
vl-convert (the Vega-Lite the spec names, headless). A chart whose page count falls short lost marks
the spec declares, as chapter 3's projection did under a Vega-Lite version mismatch (issue 39)."""

from __future__ import annotations

import json
import math
import re

# Gradio 6.31's AltairPlot: `C=e.view` keeps vega-embed's result; `x` is the element it drew into
HOOK = ("C=e.view,ie=", "C=e.view,(x.__tbtView=e.view,x.__tbtSpec=e.spec),ie=")

# one entry per drawn plot: its gr.Plot's elem_id, its spec, and {mark name: [items, shown]}
DRAWN_JS = """() => {
  const shown = (it, type) => {
    const op = (it.opacity ?? 1) * (type === 'text' ? 1 : Math.max(it.fillOpacity ?? 1, it.strokeOpacity ?? 0));
    const paint = [it.fill, it.stroke].some((c) => c && c !== 'transparent' && c !== 'none');
    const where = [it.x ?? 0, it.y ?? 0].every(Number.isFinite);
    const size = type !== 'rect' || ((it.width ?? 1) > 0 && (it.height ?? 1) > 0) || it.x2 !== undefined;
    return op > 0 && (paint || type === 'text') && where && size && (type !== 'text' || `${it.text ?? ''}` !== '');
  };
  const walk = (mark, out) => {
    if (mark.role === 'mark' && mark.marktype !== 'group') {
      const row = out[mark.name] ??= [0, 0];
      for (const it of mark.items) { row[0] += 1; row[1] += shown(it, mark.marktype) ? 1 : 0; }
    }
    for (const it of mark.items || []) for (const m of it.items || []) walk(m, out);
  };
  // where the plot's box and its drawing sit in the window (the box scrolled back to its start)
  const box = (el, drawing) => {
    el.scrollLeft = 0;
    const b = el.getBoundingClientRect(), d = drawing ? drawing.getBoundingClientRect() : b;
    return {left: b.left, right: b.right, width: b.width, drawnLeft: d.left, drawn: d.width,
            reach: el.scrollWidth, scrolls: getComputedStyle(el).overflowX !== 'visible'};
  };
  return [...document.querySelectorAll('[data-testid=altair]')].filter((el) => el.offsetParent).map((el) => {
    const host = el.querySelector('div');
    const view = host && host.__tbtView;
    const marks = {};
    if (view) walk(view.scenegraph().root, marks);
    return {id: el.closest('[id]')?.id ?? '', ready: !!view, spec: view ? JSON.stringify(host.__tbtSpec) : null,
            marks, ...box(el, host.querySelector('canvas, svg'))};
  });
}"""


def expose_views(page) -> None:
    """Patch the plot component's script as the page loads it (call before page.goto)."""
    def patch(route):
        response = route.fetch()
        body = response.text()
        if HOOK[0] not in body:
            raise AssertionError("Gradio's AltairPlot changed: tests/browser/marks.py HOOK no longer matches")
        route.fulfill(response=response, body=body.replace(HOOK[0], HOOK[1], 1))
    page.route(re.compile(r"/AltairPlot-[^/]*\.js(\?.*)?$"), patch)


def drawn(page) -> list[dict]:
    """Every visible plot on the page, with the marks it drew."""
    return page.evaluate(DRAWN_JS)


def plots_ready(page) -> list[dict]:
    """The visible plots once every one has drawn (vega-embed resolves after the canvas is painted)."""
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid=altair]')]
        .filter((el) => el.offsetParent).every((el) => el.querySelector('div')?.__tbtView)""", timeout=30_000)
    return drawn(page)


def _shown(item: dict, kind: str) -> bool:
    """The page's test (DRAWN_JS's `shown`) on one of vl-convert's scenegraph items."""
    def get(key, default):
        value = item.get(key)
        return default if value is None else value
    opacity = get("opacity", 1) * (1 if kind == "text" else max(get("fillOpacity", 1), get("strokeOpacity", 0)))
    paint = any(c and c not in ("transparent", "none") for c in (item.get("fill"), item.get("stroke")))
    where = all(isinstance(v, (int, float)) and math.isfinite(v) for v in (get("x", 0), get("y", 0)))
    size = kind != "rect" or (get("width", 1) > 0 and get("height", 1) > 0) or "x2" in item
    text = kind != "text" or str(get("text", "")) != ""
    return opacity > 0 and (paint or kind == "text") and where and size and text


def declared(spec: str | dict) -> dict[str, int]:
    """{mark name: items that show} for the spec, drawn headless by vl-convert at the spec's own version."""
    import vl_convert
    spec = json.loads(spec) if isinstance(spec, str) else spec
    version = re.search(r"/v(\d+\.\d+)", spec.get("$schema", "")).group(1)
    known = vl_convert.get_vegalite_versions()
    version = version if version in known else max((v for v in known if v.split(".")[0] == version.split(".")[0]),
                                                   key=lambda v: tuple(map(int, v.split("."))))
    graph = vl_convert.vegalite_to_scenegraph(spec, vl_version=version)
    out: dict[str, int] = {}

    def walk(mark: dict) -> None:
        if mark.get("role") == "mark" and mark.get("marktype") != "group":
            out[mark["name"]] = out.get(mark["name"], 0) + sum(_shown(i, mark["marktype"]) for i in mark["items"])
        for item in mark.get("items", []):
            for child in item.get("items", []) if isinstance(item, dict) else []:
                walk(child)
    walk(graph["scenegraph"])
    return out


def missing(plot: dict) -> dict[str, tuple[int, int]]:
    """{mark name: (declared, drawn)} for each data mark the page drew fewer of than the spec declares."""
    want = declared(plot["spec"])
    got = {name: row[1] for name, row in plot["marks"].items()}
    return {name: (n, got.get(name, 0)) for name, n in want.items() if got.get(name, 0) < n}
