"""viz building blocks: labels, formatters, token grouping, frames. Also the shared test data
(recorded traces, a hostile copy, a synthetic long prompt) that the other viz tests import."""

from __future__ import annotations

import copy
import re
import string
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from engine.schema.trace import Trace
from viz.html import chips
from viz import fmt, frames
from viz.text.labels import LABELS, LANGS, label
from tests.paths import FIXTURES

TRACES = ("trace_zh.json", "trace_en_sampled.json")
EVIL = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


@cache
def _load(name: str) -> Trace:
    return Trace.from_json((FIXTURES / name).read_text(encoding="utf-8"))


def load(name: str) -> Trace:
    """A fresh copy of a recorded trace (tests may change it)."""
    return copy.deepcopy(_load(name))


def hostile(trace: Trace) -> Trace:
    """A copy whose every trace-supplied text is markup that would run if not escaped."""
    t = copy.deepcopy(trace)
    t.prompt.raw = EVIL[0]
    for i, tok in enumerate(t.prompt.tokens):
        tok.text = EVIL[i % 2]
    for i, s in enumerate(t.steps):
        s.token, s.text = EVIL[i % 2], EVIL[(i + 1) % 2]
        for j, c in enumerate(s.candidates):
            c.text = EVIL[j % 2]
        for g in s.lens or []:
            g.text = EVIL[1]
    return t


def long_prompt_trace(n: int = 256, seed: int = 0) -> Trace:
    """The zh trace with a long synthetic prompt whose first n tokens have random causal maps
    (the same builder `python -m viz.bench` times)."""
    from viz.bench import long_prompt
    return long_prompt(load("trace_zh.json"), n, seed)


def playground_rows(trace: Trace, step: int, temperature: float, top_k: int, top_p: float) -> list[dict]:
    """What engine.sampling.playground returns, computed with numpy (no torch in viz tests)."""
    cands = trace.steps[step].candidates
    logits = np.array([c.logit for c in cands])

    def softmax(x):
        e = np.exp(x - x[np.isfinite(x)].max())
        return e / e.sum()
    before, scaled = softmax(logits), softmax(logits / temperature)
    kept_k = np.arange(len(cands)) < (top_k or len(cands))
    after_k = np.where(kept_k, scaled, 0) / scaled[kept_k].sum()
    order = np.argsort(-after_k)
    cum = np.cumsum(after_k[order])
    kept_p = np.zeros(len(cands), bool)
    kept_p[order[: int(np.searchsorted(cum, top_p)) + 1]] = True
    kept_p &= kept_k
    after_p = np.where(kept_p, after_k, 0) / after_k[kept_p].sum()
    return [{"id": c.id, "text": c.text, "logit": c.logit, "p_model": float(before[i]),
             "p_model_true": c.p_model, "p_temperature": float(scaled[i]), "p_top_k": float(after_k[i]),
             "p_top_p": float(after_p[i]), "kept_top_k": bool(kept_k[i]), "kept_top_p": bool(kept_p[i]),
             "chosen": i == int(np.argmax(after_p))} for i, c in enumerate(cands)]


# --- labels ----------------------------------------------------------------------------------

def test_every_label_has_both_languages_with_the_same_placeholders():
    fields = lambda text: {f for _, f, _, _ in string.Formatter().parse(text) if f}  # noqa: E731
    assert LANGS == ("en", "zh")
    for key, entry in LABELS.items():
        assert set(entry) == set(LANGS), key
        assert all(entry[lang].strip() for lang in LANGS), key
        assert fields(entry["en"]) == fields(entry["zh"]), key
        assert re.search(r"[\u4e00-\u9fff]", entry["zh"]) or entry["zh"] == entry["en"] \
            or key in {"logit", "token", "tpot", "ttft", "lab_unavailable"}, f"{key}: zh text has no Chinese"


def test_every_label_key_used_in_viz_exists():
    used = set()
    for path in Path(frames.__file__).parent.rglob("*.py"):
        used |= set(re.findall(r'label\(\s*"([a-z_0-9]+)"', path.read_text()))
    assert used and used <= set(LABELS), used - set(LABELS)


def test_viz_imports_without_torch_transformers_or_gradio():
    code = ("import importlib, pkgutil, sys\nfor m in ('torch', 'transformers', 'gradio'): sys.modules[m] = None\n"
            "import viz\n"
            "for m in pkgutil.walk_packages(viz.__path__, 'viz.'): importlib.import_module(m.name)\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=FIXTURES.parent.parent, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_label_fills_placeholders_and_falls_back_to_english():
    assert label("head_n", "zh", n=3) == "头 3"
    assert label("head_n", "fr", n=3) == "head 3"
    with pytest.raises(KeyError):
        label("no such key")


# --- formatters ------------------------------------------------------------------------------

def test_formatters():
    assert fmt.fmt_ms(None) == fmt.DASH
    assert fmt.fmt_ms(0.4234) == "0.42 ms" and fmt.fmt_ms(85.36) == "85.4 ms"
    assert fmt.fmt_ms(805.7) == "806 ms" and fmt.fmt_ms(2193.3) == "2.19 s"
    assert fmt.fmt_bytes(512) == "512 B" and fmt.fmt_bytes(2211840) == "2.11 MiB"
    assert fmt.fmt_bytes(46080) == "45 KiB" and fmt.fmt_bytes(1.5 * 2 ** 30) == "1.5 GiB"
    assert fmt.fmt_p(0.2231) == "22.3%" and fmt.fmt_p(0.0) == "0%" and fmt.fmt_p(1.0) == "100%"
    assert fmt.fmt_rate(9.929) == "9.93 tok/s"
    assert fmt.visible(" a\n\tb") == "␣a↵⇥b" and fmt.visible("") == "∅"
    assert fmt.visible("<E4 BB>") == "<E4 BB>" and fmt.visible("\x01") == "\\x01"


# --- token grouping --------------------------------------------------------------------------

def test_byte_pieces_group_into_the_characters_they_form():
    t = load("trace_zh.json")
    groups = chips.token_groups(t.prompt.tokens)
    assert sorted(i for tokens, _ in groups for i in tokens) == list(range(len(t.prompt.tokens)))
    boxes = ["".join(t.prompt.templated[c] for c in chars) for tokens, chars in groups
             if any(t.prompt.tokens[i].fragment for i in tokens)]
    assert boxes == ["什", "么", "计", "算"]


def test_groups_from_spans_alone_decode_the_characters():
    t = load("trace_zh.json")
    html = chips.compare_html(t.prompt.tokens, "a", t.prompt.tokens[24:35], "b")
    for ch in "什么是量子计算":
        assert ch in html
    assert "\ufffd" not in html


# --- frames ----------------------------------------------------------------------------------

def test_frames_raise_clear_errors():
    t = load("trace_en_sampled.json")
    with pytest.raises(ValueError, match="layer 99"):
        frames.heatmap_frame(t, 99, None, "en")
    with pytest.raises(ValueError, match="head"):
        frames.heatmap_frame(t, 0, 9, "en")
    with pytest.raises(ValueError, match="step"):
        frames.candidates_frame(t, len(t.steps), "en")
    t.steps[0].lens = None
    with pytest.raises(ValueError, match="logit lens"):
        frames.lens_frame(t, 0, "en")
    t.attention = None
    with pytest.raises(ValueError, match="注意力"):
        frames.heatmap_frame(t, 0, None, "zh")


def test_heatmap_keeps_only_the_lower_triangle_above_the_threshold():
    t = long_prompt_trace(64)
    cells = frames.heatmap_frame(t, 1, None, "en")
    assert (cells["k"] <= cells["q"]).all() and (cells["w"] >= frames.MIN_WEIGHT - 1e-4).all()
    assert len(cells) <= 64 * 65 // 2


def test_kv_formula_matches_the_measured_bytes():
    for name in TRACES:
        t = load(name)
        m = t.model
        per_token = 2 * m.layers * m.kv_heads * m.head_dim * {"float32": 4, "bfloat16": 2}[m.dtype]
        assert m.kv_bytes(1) == per_token
        assert all(s.kv_bytes == per_token * s.kv_tokens for s in t.steps)
