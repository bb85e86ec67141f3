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
from engine.environment import Limits
from engine.served import Endpoint, endpoints_from_env
from engine.schema.specs import short_name
from engine.schema.trace import ModelInfo
from ui.walkthrough import tab as walkthrough
from ui.chapters.actions import Actions
from ui import api
from ui.chapters.explore import Explore
from ui.page.i18n import I18N, LANG_SYNC_JS, lang_of, t, text
from ui.host.models import Models, allowed_from_env
from ui.host.recordings import page_css
from ui.share.links import LANG_JS as LINK_LANG_JS, Share
from ui.page.fonts import font_css, theme
from viz.html.css import CSS, HEAD_CSS
from viz.text.facts import fmt_count


PRESENTER_JS = "(on) => { document.body.classList.toggle('tbt-present', on); return on; }"


def model_line(i: ModelInfo, lang: str) -> str:
    quant = f" · {i.quantization}" if i.quantization else ""
    return text("model_line", lang).format(
        id=i.id, arch=i.architecture, params=f"{i.parameters / 1e6:.0f}", layers=i.layers, heads=i.heads,
        kv=i.kv_heads, quant=quant, dtype=i.dtype, device=i.device, attn=i.attn_implementation)


def model_plain(i: ModelInfo, lang: str, served: Endpoint | None = None) -> str:
    """The model in plain words, first thing on the page (the technical line is behind a toggle);
    while "Run on" names a served model (`served`), where runs go: that server, not this one's CPU."""
    device = {"cpu": "CPU"}.get(i.device.split(":")[0], "GPU")
    if served is not None:
        return text("model_plain_served", lang).format(endpoint=served.name, model=served.model,
                                                       name=short_name(i.id), device=device)
    return text("model_plain", lang).format(name=short_name(i.id), params=fmt_count(i.parameters, lang), device=device)


def loading_md(models: Models, lang: str) -> str:
    """The header while the model loads (the page is up first: main)."""
    return text("model_loading", lang).format(name=short_name(models.default))


def caps_md(limits: Limits, lang: str) -> str:
    """The host's caps, as the visitor sees them."""
    return text("caps", lang).format(
        chars=f"{limits.max_prompt_chars:,}", tokens=f"{limits.max_prompt_tokens:,}", new=f"{limits.max_new_tokens:,}",
        mb=f"{limits.max_upload_bytes / 1e6:.0f}", lab=f"{limits.lab_max_prompt_tokens:,}", seconds=limits.lab_seconds)


def build(models: Models, endpoints: list | None = None) -> gr.Blocks:
    actions = Actions(models, endpoints)
    with gr.Blocks(title="Token by Token", delete_cache=(1800, 3600)) as demo:
        lang, present = gr.State("en"), gr.State(False)
        with gr.Column(elem_id="tbt-header"):
            gr.Markdown(t("title"))
            # the page is built before the model loads (main): what describes the model comes with
            # the page's first update (on_sync), which waits for it
            with gr.Row():
                plain = gr.Markdown(loading_md(models, "en"), elem_id="model-plain")
                presenter = gr.Checkbox(label=t("presenter"), value=False, elem_id="presenter", scale=0,
                                        min_width=160)
            notice = gr.Markdown(visible=False, elem_id="model-notice")    # the default could not be loaded
            model_id = gr.Dropdown(models.allowed, value=models.default, label=t("model_choice"),
                                   visible=len(models.allowed) > 1, elem_id="model-choice")
            # the jargon (architecture, dtype, kernel) and the host's caps, one click away
            with gr.Accordion(t("technical"), open=False, elem_id="technical"):
                line = gr.Markdown(elem_id="model-line")
                caps = gr.Markdown(caps_md(models.limits, "en"), elem_classes="tbt-hint", elem_id="caps")
                gr.Markdown(t("language_hint"), elem_classes="tbt-hint")
        gr.HTML("", js_on_load=LINK_LANG_JS, elem_id="link-lang")       # a shared link's language (ui/share/links.py)
        sync = gr.HTML("", js_on_load=LANG_SYNC_JS, elem_id="lang-sync")
        share_note = gr.Markdown(visible=False, elem_id="share-note")     # what a link asked that cannot be shown
        with gr.Tabs(elem_id="top-tabs") as top:
            with gr.Tab(t("tab_explore"), id="explore"):
                explore = Explore(actions, model_id, lang)
            with gr.Tab(t("tab_walkthrough"), id="walkthrough"):
                wt, live, wt_outputs = walkthrough.build(models, actions, lang, present, model_id)
        # links to a view, charts out, the offline deck (ui/share/links.py)
        shared = Share(explore, wt, live, wt_outputs, wt.walk, lang, present, top, share_note, explore.share_bar,
                       wt.share_bar)
        shared.wire()

        def on_sync(current_present, evt: gr.EventData):
            """The page's language or ?present=1 became known: redraw in that language."""
            language, wants_present = lang_of(evt.lang), bool(evt.present) or current_present
            return [language, wants_present, gr.Tabs(selected="walkthrough") if wants_present else gr.skip(),
                    wants_present, caps_md(models.limits, language), gr.update(info=explore.prompt_info(language)),
                    gr.skip() if models.loaded else loading_md(models, language)]

        def header(language: str, source: str | None) -> str:
            """Where runs go: this page's model, or the served model "Run on" names."""
            return model_plain(models.engine.info, language, actions.endpoints.get(source or ""))

        def describe(language: str, chosen: str | None, source: str | None) -> list:
            """The model, once it is loaded (a page opened during start-up waits here). If the
            default could not be loaded, the list of models changed meanwhile."""
            info = models.engine.info
            return [header(language, source), model_line(info, language),
                    gr.update(value=models.notice(language), visible=models.fallback is not None),
                    gr.update(choices=models.allowed, value=chosen if chosen in models.allowed else models.default,
                              visible=len(models.allowed) > 1), gr.update(choices=explore.source_choices())]
        sync.change(on_sync, [present], [lang, present, top, presenter, caps, explore.prompt, plain],
                    api_visibility="private").then(
            describe, [lang, model_id, explore.source], [plain, line, notice, model_id, explore.source],
            api_visibility="private",
            show_progress="hidden").then(
            explore.relabel_all, explore.render_inputs,
            [explore.trace, explore.tree_state, explore.branch, *explore.views],
            api_visibility="private").then(
            wt.views, [live, lang, present], wt_outputs, api_visibility="private").then(
            shared.open_link, [lang, present], shared.open_outputs, api_visibility="private")
        explore.source.input(header, [lang, explore.source], plain, api_visibility="private", show_progress="hidden")
        presenter.input(lambda on: on, presenter, present, js=PRESENTER_JS, api_visibility="private").then(
            wt.views, [live, lang, present], wt_outputs, api_visibility="private")

        api.declare(models)          # /trace, /compare, /fork, /profile, /export, /serve, /read_trace, /status
    return demo


def main() -> None:
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
    demo.queue(max_size=64, default_concurrency_limit=4).launch(
        server_name=args.host, server_port=args.port, share=args.share, show_error=False,
        css=CSS + page_css(), i18n=I18N, max_file_size=models.limits.max_upload_bytes, prevent_thread_lock=True,
        # the page's typeface from local files (ui/page/fonts.py), and the rules css= cannot carry (viz/html/css.py)
        theme=theme(), head=f"<style>{font_css()}{HEAD_CSS}</style>")
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
