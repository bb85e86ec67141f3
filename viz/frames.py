"""Trace -> pandas DataFrames: the one module that knows the Trace's shape.

Chart modules draw from these frames and never reach into a Trace themselves, so a change in the
Trace format is a change here. Every function checks its indexes and raises ValueError with a
message in the reader's language (the app shows it as is).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.schema.trace import Attention, Step, Trace

from viz.fmt import short, visible
from viz.text.labels import label

MIN_WEIGHT = 1e-3  # attention cells below this are not drawn (keeps a 256-token map small)


def token_label(i: int, text: str, limit: int = 14) -> str:
    """A unique, readable axis label for position `i`: "12 ␣world"."""
    return f"{i} {short(visible(text), limit)}"


# --- checks ---------------------------------------------------------------------------------

def check_index(what: str, value: int, count: int, lang: str) -> None:
    if not isinstance(value, (int, np.integer)) or not 0 <= value < count:
        raise ValueError(label("err_index", lang, what=label(what, lang), value=value, count=count,
                               last=count - 1))


def attention_of(trace: Trace, lang: str) -> Attention:
    if trace.attention is None:
        raise ValueError(label("err_served_internals" if trace.served else "err_no_attention", lang))
    return trace.attention


def step_of(trace: Trace, step: int, lang: str) -> Step:
    if not trace.steps:
        raise ValueError(label("err_no_steps", lang))
    check_index("step", step, len(trace.steps), lang)
    return trace.steps[step]


def pick_head(rows: np.ndarray, head: int | None, lang: str) -> np.ndarray:
    """rows: [heads, ...] -> one head's rows, or the mean over heads when head is None."""
    if head is None:
        return rows.mean(axis=0)
    check_index("head", head, rows.shape[0], lang)
    return rows[head]


# --- attention ------------------------------------------------------------------------------

def prefill_map(trace: Trace, layer: int, head: int | None, lang: str) -> np.ndarray:
    """The prefill attention of one layer (one head or the head mean): [n, n], query x key."""
    attention = attention_of(trace, lang)
    check_index("layer", layer, len(attention.prefill), lang)
    return pick_head(attention.prefill[layer].unpack(), head, lang)  # [heads, n, n] -> [n, n]


def prompt_labels(trace: Trace, count: int | None = None) -> list[str]:
    tokens = trace.prompt.tokens[: count if count is not None else len(trace.prompt.tokens)]
    return [token_label(i, t.text) for i, t in enumerate(tokens)]


def cache_labels(trace: Trace, keys: int) -> list[str]:
    """Labels of the cached positions: prompt tokens first, then the tokens generated so far."""
    prompt = prompt_labels(trace)
    generated = [token_label(len(prompt) + j, s.token) for j, s in enumerate(trace.steps)]
    return (prompt + generated)[:keys]


def heatmap_frame(trace: Trace, layer: int, head: int | None, lang: str) -> pd.DataFrame:
    """Cells (q, k, w) of the causal (lower) triangle with weight >= MIN_WEIGHT."""
    weights = prefill_map(trace, layer, head, lang)
    q, k = np.tril_indices(weights.shape[0])
    w = weights[q, k]
    keep = w >= MIN_WEIGHT
    return pd.DataFrame({"q": q[keep], "k": k[keep], "w": np.round(w[keep], 4)})


def head_view_frames(trace: Trace, layer: int, head: int | None, query: int,
                     lang: str) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Tokens (one row per position, both columns) and links from `query` to its keys.

    Returns (tokens, links, pitch) where pitch is the vertical distance between rows in pixels.
    On long prompts only some labels are shown, spaced so they never overlap.
    """
    weights = prefill_map(trace, layer, head, lang)
    n = weights.shape[0]
    check_index("query", query, n, lang)
    row = weights[query].copy()
    row[query + 1:] = 0.0  # causal: a token never attends to later ones
    pitch = 18.0 if n <= 40 else max(4.0, 720.0 / n)
    gap = int(np.ceil(16 / pitch))  # rows between two labels that do not overlap
    shown_keys: list[int] = []
    for k in np.argsort(-row, kind="stable"):
        if row[k] < MIN_WEIGHT or len(shown_keys) >= 16:
            break
        if all(abs(int(k) - s) >= gap for s in shown_keys):
            shown_keys.append(int(k))
    texts = [t.text for t in trace.prompt.tokens[:n]]
    tokens = pd.DataFrame({
        "pos": np.arange(n),
        "label": [token_label(i, t, 18) for i, t in enumerate(texts)],
        "w": np.round(row, 4),
        "chosen": np.arange(n) == query,
        "show_left": [i == query or (i % gap == 0 and abs(i - query) >= gap) for i in range(n)],
        "show_right": [i in shown_keys or (gap == 1) for i in range(n)],
    })
    links = tokens.loc[row >= MIN_WEIGHT, ["pos", "label", "w"]].assign(query=query)
    return tokens, links, pitch


def attention_row_frame(trace: Trace, step: int, layer: int, head: int | None,
                        lang: str) -> pd.DataFrame:
    """One decode step's attention over every cached position: (pos, label, w, source)."""
    attention = attention_of(trace, lang)
    step_of(trace, step, lang)
    if step >= len(attention.steps):       # the real cause: the size cap, or a branch that kept none
        capped = attention.steps_capped_at is not None and step >= attention.steps_capped_at
        raise ValueError(label("err_rows_capped" if capped or trace.settings.attention else "err_branch_no_rows",
                               lang, count=len(attention.steps)))
    rows = attention.steps[step].unpack()  # [layers, heads, keys]
    check_index("layer", layer, rows.shape[0], lang)
    w = pick_head(rows[layer], head, lang)  # [keys]
    n_prompt = len(trace.prompt.tokens)
    pos = np.arange(w.shape[0])
    source = np.where(pos < n_prompt, label("source_prompt", lang), label("source_generated", lang))
    return pd.DataFrame({"pos": pos, "label": cache_labels(trace, len(w)), "w": np.round(w, 4),
                         "source": source})


# --- decode ---------------------------------------------------------------------------------

def candidates_frame(trace: Trace, step: int, lang: str) -> pd.DataFrame:
    """One row per stored candidate (plus the chosen token if it fell outside them)."""
    s = step_of(trace, step, lang)
    rows = [{"id": c.id, "text": c.text, "logit": c.logit, "p_model": c.p_model,
             "p_final": c.p_final, "rank": r, "chosen": c.id == s.id}
            for r, c in enumerate(s.candidates)]
    if not any(r["chosen"] for r in rows):
        rows.append({"id": s.id, "text": s.token, "logit": float("nan"), "p_model": s.chosen_p_model,
                     "p_final": s.chosen_p_final, "rank": s.chosen_rank, "chosen": True})
    frame = pd.DataFrame(rows)
    frame["label"] = [("▶ " if c else "") + f"{r + 1}. {short(visible(t), 16)}"
                      for r, t, c in zip(frame["rank"], frame["text"], frame["chosen"])]
    return frame


def lens_frame(trace: Trace, step: int, lang: str) -> pd.DataFrame:
    s = step_of(trace, step, lang)
    capped = trace.observation.lens_capped_at if trace.observation else None
    if s.lens is None and capped is not None and step >= capped:      # the run's states hit the size cap
        raise ValueError(label("err_lens_capped", lang, count=capped))
    if s.lens is None and s.hidden is not None:                       # kept, but no model here to read it
        raise ValueError(label("err_lens_no_model", lang, model=trace.model.id))
    if s.lens is None:
        raise ValueError(label("err_served_internals" if trace.served else "err_no_lens", lang))
    return pd.DataFrame({
        "layer": [g.layer for g in s.lens],
        "guess": [short(visible(g.text), 18) for g in s.lens],
        "id": [g.id for g in s.lens],
        "p": [g.p for g in s.lens],
        "match": [label("lens_same" if g.id == s.id else "lens_other", lang) for g in s.lens],
    })


def steps_frame(trace: Trace) -> pd.DataFrame:
    """One row per generated token with its timings, entropies and cache size."""
    columns = ["step", "token", "ms", "t_ms", "start_ms", "forward_ms", "entropy",
               "entropy_model", "p_model", "kv_tokens", "kv_bytes", "phase", "forced"]
    return pd.DataFrame([{
        "step": s.index, "token": visible(s.token), "ms": s.ms, "t_ms": s.t_ms,
        "start_ms": s.t_ms - s.ms, "forward_ms": s.forward_ms, "entropy": s.entropy,
        "entropy_model": s.entropy_model, "p_model": s.chosen_p_model, "kv_tokens": s.kv_tokens,
        "kv_bytes": s.kv_bytes, "phase": s.phase, "forced": s.forced,
    } for s in trace.steps], columns=columns)


def rows_frame(rows: list[dict], required: tuple[str, ...], lang: str) -> pd.DataFrame:
    """Plain rows from the app (lab results) as a frame, checking the keys the chart needs."""
    frame = pd.DataFrame(list(rows))
    missing = [k for k in required if k not in frame.columns]
    if frame.empty or missing:
        raise ValueError(label("err_rows", lang, keys=", ".join(missing or required)))
    return frame


def context_name(tokens: int) -> str:
    """4096 -> "4k", 131072 -> "128k"."""
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else f"{tokens:,}"
