"""Token by Token: watch a real language model run, one stage of inference at a time.

Layout and event wiring only; the work happens in engine/ (model), viz/ (charts) and ui/ (glue).
    python app.py [--model ID] [--host H] [--port P] [--share]
Hosts choose the models with TBT_MODELS and served models with TBT_ENDPOINTS (see docs/hosting.md); visitors
pick among those.
"""

from __future__ import annotations

import argparse
import logging
import os

from engine import environment

if environment.compile_enabled():
    # Before torch loads OpenMP. With the page's worker threads and the main thread each holding an
    # OpenMP pool (more threads than cores), libgomp's default spins only ~100 times before a
    # thread sleeps, and every one of the compiled step's ~200 parallel regions then pays a wake-up:
    # TPOT 43 ms instead of 25 here. ACTIVE keeps them spinning (engine/compiled/fast.py). But ACTIVE alone
    # spins for ~5 minutes (libgomp: 3e10 spins) after any parallel region while the pool has no
    # more threads than cores: after the model load, one of the server's threads burned a whole
    # core with nobody there (102 % CPU idle), taking it from visitors and the back room. A spin
    # count of libgomp's own default for an unset policy (3e5, ~3 ms) keeps the compiled step at
    # TPOT 17-18 ms and the idle server at ~4 % CPU (measured here, one start each).
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
    os.environ.setdefault("GOMP_SPINCOUNT", "300000")

import gradio as gr

# Nothing imported here loads torch or transformers: the page is served first and the model loaded
# after (main), so a visitor sees it in seconds (tests/unit/test_startup.py keeps it so).
from engine import EngineError
from engine.compiled.main_thread import MAIN
from engine.host import memory
from engine.served import endpoints_from_env
from ui import api
from ui.chapters.explore import Explore
from ui.chapters.run import Run
from ui.host.idle import quiet_when_idle
from ui.host.models import Models, allowed_from_env
from ui.host.peers import keep_peer_addresses
from ui.host.recordings import page_css
from ui.host.sessions import SessionReaper
from ui.page.fonts import font_css, theme
from ui.page.header import PRESENTER_JS, Header, caps_md, loading_md
from ui.page.i18n import DRAWN_JS, I18N, LANG_SYNC_JS, lang_of, t
from ui.page.plot import PLOT_JS
from ui.share.links import LANG_JS as LINK_LANG_JS, Share
from ui.walkthrough import tab as walkthrough
from viz.html.css import CSS, HEAD_CSS


def build(models: Models, endpoints: list | None = None) -> gr.Blocks:
    run = Run(models, endpoints)
    with gr.Blocks(title="Token by Token", delete_cache=(1800, 3600)) as demo:
        lang, present = gr.State("en"), gr.State(False)
        head = Header(models, run.endpoints)
        gr.HTML("", js_on_load=LINK_LANG_JS, elem_id="link-lang")       # a shared link's language (ui/share/links.py)
        sync = gr.HTML("", js_on_load=LANG_SYNC_JS, elem_id="lang-sync")
        share_note = gr.Markdown(visible=False, elem_id="share-note")     # what a link asked that cannot be shown
        with gr.Tabs(elem_id="top-tabs") as top:
            with gr.Tab(t("tab_explore"), id="explore"):
                explore = Explore(run, head.model_id, lang)
            with gr.Tab(t("tab_walkthrough"), id="walkthrough"):
                wt, live, wt_outputs = walkthrough.build(models, lang, present, head.model_id)
        # links to a view, charts out, the offline deck (ui/share/)
        shared = Share(explore, wt, live, wt_outputs, wt.walk, lang, present, top, share_note, explore.share_bar,
                       wt.share_bar)
        shared.wire()
        first_update(sync, head, explore, (wt, live, wt_outputs), shared, top, lang, present)
        api.declare(models)          # /trace, /compare, /fork, /profile, /export, /serve, /read_trace, /status
        # a session's state (its trace, its charts, Gradio's copy of the page) goes when its visitor has left
        SessionReaper(environment.session_grace_s()).attach(demo)
    return demo


def first_update(sync, head: Header, explore: Explore, walk: tuple, shared: Share, top, lang, present) -> None:
    """The page's language (or ?present=1) became known: everything is drawn in it, the model
    described once it is loaded, then a shared link's view opened."""
    models, (wt, live, wt_outputs) = head.models, walk

    def on_sync(current_present, evt: gr.EventData):
        language, wants_present = lang_of(evt.lang), bool(evt.present) or current_present
        return [language, wants_present, gr.Tabs(selected="walkthrough") if wants_present else gr.skip(),
                wants_present, caps_md(models.limits, language), gr.update(info=explore.prompt_info(language)),
                gr.skip() if models.loaded else loading_md(models.default, language)]
    private = {"api_visibility": "private"}
    sync.change(on_sync, [present], [lang, present, top, head.presenter, head.caps, explore.prompt, head.plain],
                **private).then(
        lambda language, chosen, source: head.describe(language, chosen, source, explore.source_choices()),
        [lang, head.model_id, explore.source], [head.plain, head.line, head.notice, head.model_id, explore.source],
        show_progress="hidden", **private).then(
        explore.relabel_all, explore.render_inputs, [explore.trace, explore.tree, explore.branch, *explore.views],
        **private).then(
        wt.views, [live, lang, present], wt_outputs, **private).then(
        shared.open_link, [lang, present], shared.open_outputs, **private).then(
        None, js=DRAWN_JS, **private)
    explore.source.input(head.where, [lang, explore.source], head.plain, show_progress="hidden", **private)
    head.presenter.input(lambda on: on, head.presenter, present, js=PRESENTER_JS, **private).then(
        wt.views, [live, lang, present], wt_outputs, **private)


def main() -> None:
    memory.limit_arenas()          # TBT_MALLOC_ARENAS, before the server's threads take arenas (engine/host/memory.py)
    keep_peer_addresses()          # no header writes a caller's address (uvicorn's FORWARDED_ALLOW_IPS)
    parser = argparse.ArgumentParser(description="Token by Token")
    parser.add_argument("--model", default=None, help="hub id or local folder (default: embedded SmolLM2-135M)")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--share", action="store_true", help="also serve through a public gradio.live link")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        endpoints = endpoints_from_env()          # the host's served models; a bad list stops the start
    except EngineError as exc:
        raise SystemExit(f"TBT_ENDPOINTS: {exc}") from None
    models = Models(allowed_from_env(args.model), load=False)
    demo = build(models, endpoints)
    # Runs share the "engine" group's limit (TBT_CONCURRENCY) and the lab its own; everything else
    # (drawing a chart, reading a file) may serve a few visitors at once instead of one.
    demo.queue(max_size=64, default_concurrency_limit=4)
    quiet_when_idle(demo)          # Gradio's queue polls every 1 ms while empty (ui/host/idle.py)
    demo.launch(
        server_name=args.host, server_port=args.port, share=args.share, show_error=False,
        css=CSS + page_css(), i18n=I18N, max_file_size=models.limits.max_upload_bytes, prevent_thread_lock=True,
        state_session_capacity=environment.max_sessions(),
        # the page's typeface from local files (ui/page/fonts.py), and the rules css= cannot carry (viz/html/css.py)
        theme=theme(), head=f"<style>{font_css()}{HEAD_CSS}</style><script>{PLOT_JS}</script>")
    try:
        models.load_default()       # torch, transformers and the weights: the page is already up
        logging.info("%s is loaded: runs can start", models.default)
        MAIN.serve()                # the compiled decode path compiles and steps here (engine/compiled/main_thread.py)
    except KeyboardInterrupt:
        pass
    finally:
        demo.close()


if __name__ == "__main__":
    main()
