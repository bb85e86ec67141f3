"""Share a moment: a link to any view of any kept run, the chapter's charts as files, the deck.

A link is the page's address with query parameters: the run (`run`: "rec" for the recording in the
link's language, else the id of a run kept by content hash in engine/host/shared_runs.py), the view
(`open`: explore or walkthrough; Gradio itself reads `view`, for its API and Settings panels), the chapter or walkthrough step, the decode step, layer and head,
the branch, the sampling playground's settings, the language and presenter mode.

Why query parameters read from gr.Request, not gr.DeepLinkButton: a deep link restores the
component values Gradio kept for one session (in the server's memory, until it restarts), not
a visitor's gr.State (the trace), and nothing bounds or checks what it keeps. Here the run is
kept by content hash in a store the host caps (TBT_SHARE_MB), and is read back as an upload is.
Gradio's client sends the page's query string with every queued event, so the handler that opens
a link is an ordinary event at the end of the page's first update (app.py), reading
`request.query_params`. Two things Gradio does not give a handler, and a few lines of JavaScript
do: the page's own address (to write the link), and which walkthrough step is on screen (its
Back/Next set it on the page). And one Gradio has no parameter for: its language (LANG_JS).
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import gradio as gr
from gradio.context import get_blocks_context
from gradio.i18n import I18nData

from engine import EngineError
from engine.host.shared_runs import store
from engine.run.request import PLAYGROUND
from engine.schema.branches import ROOT, find, view

from viz.text.strings import LANGS

from ui.share.charts_out import chapter_files, plots_in
from ui.share.deck import deck_html
from ui.host.errors import message, refused
from ui.host.runs import TempFolder
from ui.host.recordings import is_recording, recorded
from ui.page import HIDDEN
from ui.page.i18n import text
from ui.chapters.common import clamp, head_choices, known_head
from ui.chapters.sampling import sampling_view

PRIVATE = {"api_visibility": "private"}
RECORDING = "rec"
# The link's language. Gradio takes its language from the browser's and has no parameter for it;
# its Settings panel switches it with `changeLocale`, exported by its own i18n module. This script
# calls that same function (the module already loaded on the page, found among the page's scripts)
# and sets <html lang> at once, so the language the page reports first (ui/page/i18n.py) is the link's.
LANG_JS = """
const wanted = new URLSearchParams(location.search).get('lang');
const tag = {zh: 'zh-CN', en: 'en'}[wanted];
if (tag && !document.documentElement.lang.startsWith(wanted)) {
  document.documentElement.lang = tag;
  const core = performance.getEntriesByType('resource').map((e) => e.name)
    .find((n) => /\/assets\/core-[\w-]+\.js$/.test(n));
  if (core) import(core).then((m) => m.changeLocale(tag)).catch(() => {});
}
"""
# What the page knows and the server does not: its own address, and the walkthrough step on screen.
PAGE_JS = """(...args) => {
  const steps = [...document.querySelectorAll('[id^="wt-step-"]')].filter((e) => /^wt-step-\\d+$/.test(e.id));
  const shown = steps.find((e) => e.offsetParent !== null);
  args[args.length - 2] = location.origin + location.pathname;
  args[args.length - 1] = shown ? Number(shown.id.slice(8)) : 0;
  return args;
}"""
COPY_JS = "(link) => { try { if (link) navigator.clipboard.writeText(link); } catch (e) {} }"
DECKS = TempFolder("decks", keep=32)         # made by the first deck, removed at exit


def link(base: str, **params) -> str:
    """The page's address with the parameters that have a value (0 is one: step 0, top-k 0)."""
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return f"{base}?{urlencode(kept)}"


def number(value, default=0, whole=True):
    try:
        got = float(value)
        return int(got) if whole else got
    except (TypeError, ValueError):
        return default


OPENED = "opened"        # (in open_link's updates until it is read) the run the link opened, None if refused


def sentence(note: str) -> str:
    """A note as a sentence of its own: its first letter capital (a refusal can start lowercase)."""
    return note[:1].upper() + note[1:] if note else note


def opened_md(run, notes: list[str], lang: str) -> str:
    """The line at the top of a page opened from a link: where it came from (the run's prompt and
    day), or plainly that its run could not be opened; then each thing it asked that could not be
    honoured, one sentence a line."""
    if run is None:
        head = text("share_refused", lang)
    else:
        prompt = run.prompt.raw if len(run.prompt.raw) <= 80 else run.prompt.raw[:79] + "…"
        head = text("share_opened_from", lang).format(prompt=md_escape(prompt), date=run.created[:10])
    return "  \n".join([head, *(sentence(n) for n in notes)])


def md_escape(words: str) -> str:
    """A visitor's words inside Markdown: characters stay characters (no emphasis, links or HTML)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~])", r"\\\1", words.replace("\n", " "))


def keep(trace, lang: str) -> str:
    try:
        return store().keep(trace)
    except EngineError as exc:
        raise refused(exc, lang) from None


class Share:
    """Links made and opened, chapters' charts exported, decks written: wired once the page is laid out."""

    def __init__(self, explore, wt, live, wt_outputs, walk, lang, present, top, note, explore_bar, wt_bar):
        self.explore, self.wt, self.live, self.wt_outputs, self.walk = explore, wt, live, wt_outputs, walk
        self.lang, self.present, self.top, self.note = lang, present, top, note
        self.bar, self.wt_bar = explore_bar, wt_bar
        self.chapter = gr.State("tokens")          # the Explore chapter on show (its tab's id)
        self.tabs = [tab for tab in explore.chapters.children if isinstance(tab, gr.Tab)]
        # tabs and walkthrough steps named from the catalogue: Gradio labels them once, at start, in
        # the browser's language; a link that switches the language names them again (open_link)
        self.named = [b for b in get_blocks_context().blocks.values()
                      if isinstance(b, (gr.Tab, gr.Step)) and isinstance(b.label, I18nData)]
        self.plots = {tab.id: plots_in(tab) for tab in self.tabs}

    # --- making a link ---------------------------------------------------------------------------
    def explore_link(self, chapter, tree, branch, trace, step, layer, head, query, d_layer, d_head, s_step,
                     temperature, top_k, top_p, seed, lang, present, base, _step) -> dict:
        if trace is None:
            return gr.skip()
        run = RECORDING if is_recording(trace) and not (tree and tree.branches) else keep(tree or trace, lang)
        url = link(base, open="explore", run=run, chapter=chapter, branch=branch or "", step=number(step),
                   layer=number(d_layer), head=d_head, p_layer=number(layer), p_head=head, query=number(query),
                   s_step=number(s_step), temperature=number(temperature, 1.0, whole=False), top_k=number(top_k),
                   top_p=number(top_p, 1.0, whole=False), seed=number(seed), lang=lang, present=1 if present else "")
        return gr.update(value=url, visible=True)

    def walkthrough_link(self, live, lang, present, base, step) -> dict:
        runs = {}
        if live:
            runs = {"run": keep(live["next"], lang), "normal": keep(live["normal"], lang),
                    "reasoning": keep(live["reasoning"], lang)}
        url = link(base, open="walkthrough", wt=number(step), **runs, lang=lang, present=1 if present else "")
        return gr.update(value=url, visible=True)

    # --- opening one -----------------------------------------------------------------------------
    def read(self, run: str, lang: str, notes: list[str]):
        """The run a link names; None (and the reason in `notes`) when it cannot be read."""
        if run == RECORDING:
            return recorded(lang)["next"]
        try:
            return store().read(run, self.explore.run.models.limits)
        except EngineError as exc:
            notes.append(message(exc, lang))
            return None

    def open_link(self, lang, present, request: gr.Request) -> dict:
        """The view a link names: the run, the chapter or step and the controls. What cannot be
        honoured (a run gone, a step out of range) is said in the note at the top. It runs at the end
        of each first draw of the page in a language (app.py), and opens the link in the link's
        language only (LANG_JS switches the page to it), so the draw in that language is the last."""
        query = dict(request.query_params) if request is not None else {}
        where = query.get("open")
        wanted = query.get("lang")
        if where not in ("explore", "walkthrough") or (wanted in LANGS and wanted != lang):
            return gr.skip()
        notes: list[str] = []
        out = (self.open_walkthrough(query, lang, bool(present), notes) if where == "walkthrough"
               else self.open_explore(query, lang, notes))
        if wanted in LANGS:
            out.update({b: type(b)(label=text(b.label.key, lang)) for b in self.named})
        said = opened_md(out.pop(OPENED, None), notes, lang)      # (out loses the key before it is returned)
        return {**out, self.note: gr.update(value=said, visible=True)}

    def open_walkthrough(self, query: dict, lang: str, present: bool, notes: list[str]) -> dict:
        steps = len(self.wt.first_output)
        asked = number(query.get("wt"), 0)
        if not 0 <= asked < steps:
            notes.append(text("share_wt_range", lang).format(asked=query.get("wt"), last=steps))
        out = {self.top: gr.Tabs(selected="walkthrough"), self.walk: gr.Walkthrough(selected=clamp(asked, steps - 1))}
        out[OPENED] = recorded(lang)["next"]
        if query.get("run"):
            live = {kind: self.read(query.get(key, ""), lang, notes)
                    for kind, key in (("next", "run"), ("normal", "normal"), ("reasoning", "reasoning"))}
            if all(live.values()):
                out.update({self.live: live, **dict(zip(self.wt_outputs, self.wt.views(live, lang, present),
                                                        strict=True))})
                out[OPENED] = live["next"]
            else:
                out[OPENED] = None
                notes.append(text("share_recording_instead", lang))
        return out

    def open_explore(self, query: dict, lang: str, notes: list[str]) -> dict:
        ex = self.explore
        run = query.get("run") or RECORDING
        tree = opened = self.read(run, lang, notes)
        if tree is None:
            notes.append(text("share_recording_instead", lang))
            tree, run = recorded(lang)["next"], RECORDING
        branch = query.get("branch") or ROOT
        try:
            trace = view(tree, branch)
        except EngineError as exc:
            notes.append(message(exc, lang))
            trace, branch = tree, ROOT
        recording = run == RECORDING
        heads = head_choices(trace.model.heads)
        head, p_head = known_head(query.get("head"), heads), known_head(query.get("p_head"), heads)
        p = PLAYGROUND         # what the playground shows unless the link says otherwise
        knobs = (number(query.get("temperature"), p.temperature, whole=False), number(query.get("top_k"), p.top_k),
                 number(query.get("top_p"), p.top_p, whole=False), number(query.get("seed"), p.seed))
        out = ex.render(trace, number(query.get("p_layer")), p_head, number(query.get("query")),
                        number(query.get("layer")), head, *knobs, lang, tree, branch,
                        write_file=not recording, recording=recording)
        last = max(len(trace.steps) - 1, 0)
        step, s_step = number(query.get("step"), last), number(query.get("s_step"), 0)
        for asked in {step, s_step}:
            if not 0 <= asked <= last:
                notes.append(text("share_step_range", lang).format(asked=asked, last=last))
        step, s_step = clamp(step, last), clamp(s_step, last)
        layer = clamp(number(query.get("layer")), trace.model.layers - 1)
        # the step on show, its logit lens computed on view where the page can
        out.update(zip(ex.decode.shown, ex.decode.view(trace, step, layer, head, lang)))
        out.update(zip(ex.sampling.shown, sampling_view(trace, s_step, *knobs, lang)))
        out[ex.decode.step] = gr.update(maximum=max(last, 1), value=step)
        out[ex.sampling.step] = gr.update(maximum=max(last, 1), value=s_step)
        out.update(zip(ex.sampling.knobs, knobs))
        chapter = query.get("chapter") if query.get("chapter") in self.plots else "tokens"
        if query.get("chapter") and query.get("chapter") != chapter:
            notes.append(text("share_chapter_unknown", lang))
        # the question with its answer: the run's prompt in the prompt box (a run of one's own starts from it)
        return {**out, ex.trace: trace, ex.tree: tree, ex.branch: branch, self.chapter: chapter,
                ex.chapters: gr.Tabs(selected=chapter), self.top: gr.Tabs(selected="explore"),
                ex.prompt: gr.update(value=trace.prompt.raw), OPENED: opened}

    @property
    def open_outputs(self) -> list:
        ex = self.explore
        return list(dict.fromkeys([*self.named, self.note, self.top, self.walk, self.live, *self.wt_outputs,
                                   ex.trace, ex.tree, ex.branch, *ex.views, *ex.sampling.knobs, self.chapter,
                                   ex.chapters, ex.prompt]))

    # --- charts and decks --------------------------------------------------------------------------
    def chapter_charts(self, chapter, trace, tree, branch, lang, *values):
        """The chapter's charts as on the page; its cards of the branch on show, if one is."""
        plots = [(p.elem_id, v) for p, v in zip(self.all_plots, values)
                 if p in self.plots.get(chapter, [])]
        shown = find(tree, branch) if tree is not None and branch and branch != ROOT else None
        paths = chapter_files(chapter, plots, trace, lang, branch=shown)
        return gr.update(value=paths, elem_classes=[])

    @property
    def all_plots(self) -> list:
        return [p for tab in self.tabs for p in self.plots[tab.id]]

    @staticmethod
    def deck_file(traces, lang: str, live: bool) -> dict:
        folder = DECKS.fresh()
        path = folder / f"token-by-token-{lang}.html"
        path.write_text(deck_html(traces, lang, live=live), encoding="utf-8")
        return gr.update(value=[str(path)], elem_classes=[])

    def explore_deck(self, trace, lang):
        if trace is None or is_recording(trace):
            return self.deck_file(None, lang, live=False)
        return self.deck_file({"next": trace}, lang, live=True)

    def wire(self) -> None:
        ex, bar, wt_bar = self.explore, self.bar, self.wt_bar
        for tab in self.tabs:      # another chapter: the last one's files go (their list sat above every tab)
            tab.select(lambda chosen=tab.id: (chosen, gr.update(value=None, elem_classes=[HIDDEN])), None,
                       [self.chapter, bar.files], queue=False, **PRIVATE)
        ex.output.click(lambda: "decode", None, self.chapter, queue=False, **PRIVATE)   # a token opens Decode
        # a link is written at once (not queued behind visitors' runs) and on every press: one whose request
        # hung (Chromium on a loaded box: tests/browser/controls.press_answered) holds no later press back
        made = bar.link_btn.click(self.explore_link, [
            self.chapter, ex.tree, ex.branch, ex.trace, ex.decode.step, *ex.prefill.controls, ex.decode.layer,
            ex.decode.head, ex.sampling.step, *ex.sampling.knobs, self.lang, self.present, bar.page, bar.step],
            bar.link, js=PAGE_JS, queue=False, trigger_mode="multiple", **PRIVATE)
        made.success(None, bar.link, None, js=COPY_JS, **PRIVATE)
        made = wt_bar.link_btn.click(self.walkthrough_link, [self.live, self.lang, self.present, wt_bar.page,
                                                             wt_bar.step], wt_bar.link, js=PAGE_JS, queue=False,
                                     trigger_mode="multiple", **PRIVATE)
        made.success(None, wt_bar.link, None, js=COPY_JS, **PRIVATE)
        bar.export_btn.click(self.chapter_charts, [self.chapter, ex.trace, ex.tree, ex.branch, self.lang, *self.all_plots], bar.files,
                             concurrency_limit=2, concurrency_id="charts-out", **PRIVATE)
        bar.deck_btn.click(self.explore_deck, [ex.trace, self.lang], bar.files, concurrency_limit=2,
                           concurrency_id="charts-out", **PRIVATE)
        wt_bar.deck_btn.click(lambda live, lang: self.deck_file(live, lang, live=bool(live)), [self.live, self.lang],
                              wt_bar.files, concurrency_limit=2, concurrency_id="charts-out", **PRIVATE)

