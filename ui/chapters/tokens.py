"""1 · Tokens: the prompt (with its chat template) as token chips, the raw prompt under a second
tokenizer beside ours, and one token's embedding vector with its nearest tokens."""

from __future__ import annotations

import gradio as gr

from engine.schema.trace import Trace
from viz import html
from viz.charts.notice import embedding_strip, notice_chart
from viz.text.labels import label

from ui.chapters.common import CLICK_JS, PRIVATE, clamp, intro, plot
from ui.host.models import torch_side


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


def first_word(trace: Trace) -> int:
    """Index of the first whole word of the visitor's own text (after the chat template's
    preamble; whole_word: a Chinese prompt opens on a character, not on the byte piece <E5 B0>),
    else of its first token."""
    begin = max(trace.prompt.templated.find(trace.prompt.raw), 0)
    tokens = trace.prompt.tokens
    own = [i for i, t in enumerate(tokens) if t.start >= begin and not t.special]
    return next((i for i in own if whole_word(tokens, i)), own[0] if own else 0)


def comparison(models, trace: Trace) -> tuple:
    """(our tokens, our name, the second tokenizer's tokens, its name) for the raw prompt."""
    engine = models.of_trace(trace) or models.engine
    other, tokens = torch_side("engine.model.other_tokenizer"), torch_side("engine.model.tokens")
    raw = trace.prompt.raw
    ours = tokens.prompt_tokens(engine.token_bytes, raw, engine.encode(raw, templated=True))
    return ours, engine.info.id.split(":")[-1], other.qwen_tokens(raw), other.NAME


def embedding(models, trace: Trace | None, index, lang: str) -> tuple:
    """(the embedding strip of prompt token `index`, its nearest tokens as HTML)."""
    if trace is None or not trace.prompt.tokens:
        return notice_chart(label("run_first", lang)), ""
    engine = models.of_trace(trace)
    if engine is None:
        return notice_chart(label("other_model", lang)), ""
    token = trace.prompt.tokens[clamp(index, len(trace.prompt.tokens) - 1)]
    vector, neighbors = torch_side("engine.model.embeddings").embedding_neighbors(engine, token.id)
    title = f"{label('embedding_of', lang)} {token.text!r} ({label('embedding_dims', lang, id=token.id, n=len(vector))})"
    return (embedding_strip(vector, title),
            html.neighbors_html({"id": token.id, "text": token.text}, neighbors, lang=lang))


class Tokens:
    """Laid out inside the chapter's tab; `draw` fills `views` from a trace."""

    def __init__(self, models):
        self.models = models
        intro(0)
        self.chips = gr.HTML(elem_id="prompt-chips", js_on_load=CLICK_JS)
        self.compare = gr.HTML(elem_id="compare")
        with gr.Row():
            # side by side where both have room; one above the other on a phone
            self.embedding = plot("embedding", min_width=320)
            self.neighbors = gr.HTML(elem_id="neighbors", min_width=300)

    @property
    def views(self) -> list:
        return [self.chips, self.compare, self.embedding, self.neighbors]

    def draw(self, trace: Trace, lang: str) -> list:
        """The chips and the comparison; the embedding opens on the visitor's first whole word
        (not on <|im_start|>)."""
        word = first_word(trace)
        return [html.prompt_html(trace, word, lang=lang), html.compare_html(*comparison(self.models, trace), lang=lang),
                *embedding(self.models, trace, word, lang)]

    def wire(self, trace: gr.State, lang: gr.State) -> None:
        def pick(tr, lang_v, evt: gr.EventData):
            """A click on a prompt chip: that token's embedding."""
            if tr is None:
                return gr.skip()
            return [html.prompt_html(tr, int(evt.index), lang=lang_v), *embedding(self.models, tr, evt.index, lang_v)]
        self.chips.click(pick, [trace, lang], [self.chips, self.embedding, self.neighbors], **PRIVATE)
