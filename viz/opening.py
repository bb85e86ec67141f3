"""Where a trace's views open: the decode step Decode and Sampling show first, and the layer, head
and prompt token of the prefill's attention views, each chosen from the trace's own figures (its
tokens, its entropies, its measured attention), never a fixed position.

- A step opens where the model was least sure among the steps whose token is a word: not a byte
  piece of a character (<E5>), not white space or punctuation, not a special token such as
  <|im_end|> (the end of the answer is the model's most certain step, and says nothing to read).
- The attention opens on the head with the clearest pattern: the one that, row after row, puts the
  most weight on one earlier token. The first token is left out of that count, since most heads
  park the weight they do not need there (the "attention sink"), and so is the token itself.
  Averaged over heads, such patterns blur into each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.schema.trace import Step, Trace

from viz.fmt import HEX_FRAGMENT

# A step reads as text only if at least this share of the probability of its top candidates is on
# whole characters or words, not on byte pieces (<E5>).
READABLE_SHARE, READABLE_TOP = 0.5, 10


def readable_step(step: Step) -> bool:
    """Whether a step reads as text: its token is a whole character or word (not white space), and
    most of its top candidates' probability is on whole ones (a Chinese character is often two or
    three byte pieces, each a step of its own whose candidates are pieces too)."""
    if HEX_FRAGMENT.fullmatch(step.token) or not step.token.strip():
        return False
    top = step.candidates[:READABLE_TOP]
    total = sum(c.p_model for c in top)
    whole = sum(c.p_model for c in top if not HEX_FRAGMENT.fullmatch(c.text))
    return total <= 0 or whole >= READABLE_SHARE * total


def is_word(text: str) -> bool:
    """A token that is (part of) a word: it holds a letter of any script (汉字 count), and it is not
    a special token's name (<|im_end|>, </s>)."""
    plain = text.strip()
    return any(ch.isalpha() for ch in plain) and not (plain.startswith("<") and plain.endswith(">"))


def special_ids(trace: Trace) -> set[int]:
    """The ids the trace's prompt marks as special (its chat template's <|im_start|>, <|im_end|>)."""
    return {t.id for t in trace.prompt.tokens if t.special}


def word_step(step: Step, specials: set[int] = frozenset()) -> bool:
    """A step worth opening on: sampled (not inserted by the engine), not a special token, a word
    that reads as text (readable_step)."""
    return not step.forced and step.id not in specials and is_word(step.token) and readable_step(step)


def first_readable_step(trace: Trace) -> int:
    """The first word step (word_step), else the first that reads as text, else step 0."""
    specials = special_ids(trace)
    return next((s.index for s in trace.steps if word_step(s, specials)),
                next((s.index for s in trace.steps if readable_step(s)), 0))


def least_sure_step(trace: Trace) -> int:
    """The step where the model's own distribution had the most entropy, where sampling matters
    most: among the word steps when there are any, else among those that read as text, else all."""
    specials = special_ids(trace)
    steps = trace.steps
    candidates = ([i for i, s in enumerate(steps) if word_step(s, specials)]
                  or [i for i, s in enumerate(steps) if readable_step(s)] or range(len(steps)))
    return max(candidates, key=lambda i: steps[i].entropy_model, default=0)


def own_positions(trace: Trace) -> list[int]:
    """The positions of the visitor's own prompt inside the templated one (not the chat template's
    "system", "user", "assistant"); every position when the prompt is not found in it as is."""
    p = trace.prompt
    start = p.templated.rfind(p.raw) if p.raw else -1
    if start < 0:
        return list(range(len(p.tokens)))
    end = start + len(p.raw)
    return [i for i, t in enumerate(p.tokens) if t.start >= start and t.end <= end]


@dataclass(frozen=True)
class Opening:
    """The attention view a trace opens on, and the figure it was chosen by."""
    layer: int
    head: int
    query: int
    focus: float        # the head's mean, over its rows, of the largest weight on one earlier token
    heads: int          # how many heads were compared (layers x heads)


def focus_rows(maps: np.ndarray) -> np.ndarray:
    """maps [heads, n, n] (query x key) -> [heads, n]: each row's largest weight on one earlier
    token other than the first (0 for the first two rows, which have none)."""
    n = maps.shape[-1]
    q, k = np.indices((n, n))
    earlier = (k < q) & (k >= 1)
    return np.where(earlier, maps, 0.0).max(axis=-1)


def telling_head(trace: Trace) -> Opening | None:
    """The layer and head whose rows put the most weight on one earlier token (mean over the rows
    that have one), and the prompt word it does that most for; None without prefill attention or
    with fewer than three mapped tokens."""
    attention = trace.attention
    n = attention.prefill_tokens if attention is not None else 0
    if attention is None or n < 3 or not attention.prefill:
        return None
    best: tuple[float, int, int, np.ndarray] | None = None
    for layer, block in enumerate(attention.prefill):
        rows = focus_rows(block.unpack())[:, 2:]            # [heads, n - 2]: the rows that have a choice
        means = rows.mean(axis=1)
        head = int(np.argmax(means))
        if best is None or means[head] > best[0]:
            best = (float(means[head]), layer, head, rows[head])
    focus, layer, head, rows = best
    tokens = trace.prompt.tokens
    words = [i for i in own_positions(trace) if 2 <= i < n and is_word(tokens[i].text) and not tokens[i].special]
    query = max(words, key=lambda i: rows[i - 2]) if words else n - 1
    return Opening(layer=layer, head=head, query=query, focus=focus,
                   heads=len(attention.prefill) * int(attention.prefill[0].shape[0]))
