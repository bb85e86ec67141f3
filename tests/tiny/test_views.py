"""Every chapter's view of a watched run on each tiny architecture, drawn by the page's own code
(the chapters' `draw`, the decode step's view with its lens), in English and Chinese."""

import gradio as gr
import pytest

from engine import Settings, run_trace
from tests.tiny.models import ARCHS, SLIDING_ARCHS
from ui.host.models import Models

PROMPT = "Tell me a short story about a cat."


def drawn(values) -> list:
    """Every value a view function gave, gr.update dicts and tuples unpacked."""
    return [v for v in values if v is not None]


@pytest.mark.parametrize("arch", ARCHS)
def test_every_chapter_draws_in_en_and_zh(arch, tiny_model):
    from ui.chapters.decode import decode_view, with_lens
    from ui.chapters.kv import KvCache
    from ui.chapters.prefill import Prefill
    from ui.chapters.sampling import Sampling
    from ui.chapters.speed import Speed
    from ui.chapters.tokens import Tokens
    from viz.html import reasoning_html
    models = Models([str(tiny_model(arch))])
    engine = models.engine
    trace = run_trace(engine, PROMPT, Settings(max_new_tokens=6, ignore_eos=True, attention=True, logit_lens=True))
    info = engine.info
    with gr.Blocks():
        tokens, prefill, sampling = Tokens(models), Prefill(info.layers, info.heads), Sampling()
    for lang in ("en", "zh"):
        assert len(drawn(tokens.draw(trace, lang))) == len(tokens.views)
        assert len(drawn(prefill.draw(trace, 0, 0, 0, lang, True))) == len(prefill.views)
        kv = KvCache.draw(trace, lang)
        subtitle = " ".join(kv[0].to_dict()["title"]["subtitle"])
        assert (str(info.kv_window_held) in subtitle) == (arch in SLIDING_ARCHS)
        assert len(drawn(Speed.draw(trace, lang))) == 3
        assert len(drawn(sampling.draw(trace, 0, (0.8, 0, 1.0, 0), lang))) == len(sampling.views)
        facts, candidates, row, lens = decode_view(with_lens(models, trace, 2), 2, info.layers - 1, 0, lang)
        lens_trace = with_lens(models, trace, 2)
        assert lens_trace.steps[2].lens is not None and len(lens_trace.steps[2].lens) == info.layers
        assert all(v is not None for v in (facts, candidates, row, lens))
        assert reasoning_html(trace, lang)
