"""The page's header: its title, the model in plain words (the technical line and the host's caps
one click away), the presenter switch, and the host's choice of models.

The page is built before the model loads (app.py): what describes the model comes with the page's
first update (`describe`), which waits for it.
"""

from __future__ import annotations

import gradio as gr

from engine.environment import Limits
from engine.schema.specs import short_name
from engine.schema.trace import ModelInfo
from engine.served import Endpoint
from viz.fmt import device_name
from viz.text.facts import fmt_count

from ui.page.i18n import t, text

PRESENTER_JS = "(on) => { document.body.classList.toggle('tbt-present', on); return on; }"


# how the weights came, in words: the loader's names (engine/model/loading.py) -> the catalogue's
QUANT_WORDS = {"gguf-q4_1 (dequantized)": "quant_gguf_q4_1", "bnb-int8": "quant_bnb_int8", "bnb-nf4": "quant_bnb_nf4"}


def model_line(i: ModelInfo, lang: str) -> str:
    """The technical line: the model's id and shape, how its weights came, what runs it, in words
    (no loader names, "cpu" is CPU), the identifiers a developer looks up (float32, sdpa) as code."""
    quant = f" · {text(QUANT_WORDS[i.quantization], lang) if i.quantization in QUANT_WORDS else i.quantization}" \
        if i.quantization else ""
    return text("model_line", lang).format(
        id=i.id, arch=i.architecture, params=f"{i.parameters / 1e6:.0f}", layers=i.layers, heads=i.heads,
        kv=i.kv_heads, quant=quant, dtype=i.dtype, device=device_name(i.device), attn=attention_used(i, lang))


def attention_used(i: ModelInfo, lang: str) -> str:
    """The attention implementation the model runs, and the one asked for when the model refused it
    (Gemma 2 refuses SDPA: the loader fell back to eager)."""
    if not i.attn_requested or i.attn_requested == i.attn_implementation:
        return i.attn_implementation
    return text("attn_fallback", lang).format(used=i.attn_implementation, asked=i.attn_requested)


def model_plain(i: ModelInfo, lang: str, served: Endpoint | None = None) -> str:
    """The model in plain words, first thing on the page (the technical line is behind a toggle);
    while "Run on" names a served model (`served`), where runs go: that server, not this one's CPU."""
    device = {"cpu": "CPU"}.get(i.device.split(":")[0], "GPU")
    if served is not None:
        return text("model_plain_served", lang).format(endpoint=served.name, model=served.model,
                                                       name=short_name(i.id), device=device)
    return text("model_plain", lang).format(name=short_name(i.id), params=fmt_count(i.parameters, lang), device=device)


def loading_md(model_id: str, lang: str) -> str:
    """The header while the model loads (the page is up first)."""
    return text("model_loading", lang).format(name=short_name(model_id))


def caps_md(limits: Limits, lang: str) -> str:
    """The host's caps, as the visitor sees them."""
    return text("caps", lang).format(
        chars=f"{limits.max_prompt_chars:,}", tokens=f"{limits.max_prompt_tokens:,}", new=f"{limits.max_new_tokens:,}",
        mb=f"{limits.max_upload_bytes / 1e6:.0f}", lab=f"{limits.lab_max_prompt_tokens:,}", seconds=limits.lab_seconds)


class Header:
    def __init__(self, models, endpoints: dict):
        """`endpoints`: the host's served models by name (what "Run on" can name)."""
        self.models, self.endpoints = models, endpoints
        with gr.Column(elem_id="tbt-header"):
            gr.Markdown(t("title"))
            with gr.Row():
                self.plain = gr.Markdown(loading_md(models.default, "en"), elem_id="model-plain")
                self.presenter = gr.Checkbox(label=t("presenter"), value=False, elem_id="presenter", scale=0,
                                             min_width=160)
            self.notice = gr.Markdown(visible=False, elem_id="model-notice")    # the default could not be loaded
            self.model_id = gr.Dropdown(models.allowed, value=models.default, label=t("model_choice"),
                                        visible=len(models.allowed) > 1, elem_id="model-choice")
            # the jargon (architecture, dtype, kernel) and the host's caps, one click away
            with gr.Accordion(t("technical"), open=False, elem_id="technical"):
                self.line = gr.Markdown(elem_id="model-line")
                self.caps = gr.Markdown(caps_md(models.limits, "en"), elem_classes="tbt-hint", elem_id="caps")
                gr.Markdown(t("language_hint"), elem_classes="tbt-hint")

    def where(self, language: str, source: str | None) -> str:
        """Where runs go: this page's model, or the served model "Run on" names."""
        return model_plain(self.models.engine.info, language, self.endpoints.get(source or ""))

    def describe(self, language: str, chosen: str | None, source: str | None, sources: list) -> list:
        """[plain, line, notice, model choice, "Run on" choices] once the model is loaded (a page
        opened during start-up waits here). If the default could not be loaded, the list of models
        changed meanwhile."""
        models = self.models
        return [self.where(language, source), model_line(models.engine.info, language),
                gr.update(value=models.notice(language), visible=models.fallback is not None),
                gr.update(choices=models.allowed, value=chosen if chosen in models.allowed else models.default,
                          visible=len(models.allowed) > 1), gr.update(choices=sources)]
