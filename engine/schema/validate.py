"""Cross-field checks of a parsed Trace before anything draws it.

`from_json` checks each value's type; a file can still be type-correct and hostile: a header that
claims 40 million prompt positions over a 1 KB attention block, token spans outside the text,
step counts that disagree with the steps. Charts size their data from such fields, so every field
that sizes something is checked against the data it describes and against the host's caps, with
Python integers (no numpy overflow). The first problem found raises TraceFormatError naming the
field. (Kept by hand, after pydantic has read the kinds: each bound here is another field or a host cap,
which a field's own constraint cannot name; as model validators these would be the same lines.)
"""

from __future__ import annotations

import math

from engine.errors import TraceFormatError
from engine.environment import Limits
from engine.schema.branches import MAX_BRANCHES
from engine.schema.trace import STOP_REASONS, Trace

# Sizes no real model reaches; anything above is a hostile header, not a big model.
MAX_LAYERS, MAX_HEADS, MAX_VOCAB, MAX_CONTEXT = 1_024, 1_024, 10_000_000, 100_000_000
MAX_TOTAL_VALUES = 64_000_000        # attention values all blocks together may unpack to


def _check(ok: bool, where: str, what: str) -> None:
    if not ok:       # the page says it as "{where} is wrong ({what})" in the visitor's language
        raise TraceFormatError(f"{where}: {what}", "trace_field", where=where, detail=what)


def _between(value: int | float, lo: int | float, hi: int | float, where: str) -> None:
    if not lo <= value <= hi:
        got, low, high = repr(value)[:40], f"{lo:,}", f"{hi:,}"
        raise TraceFormatError(f"{where}: {got} is outside {low}..{high}", "trace_out_of_range", where=where,
                               value=got, lo=low, hi=high)


def read_trace(text: str | bytes, limits: Limits | None = None) -> Trace:
    """A trace file from outside (an upload, the CLI's `inspect`), parsed within the host's upload
    cap and checked: the one way a file becomes a Trace. Raises TraceFormatError."""
    limits = limits or Limits()
    return validate(Trace.from_json(text, max_bytes=limits.max_upload_bytes), limits)


def validate(trace: Trace, limits: Limits | None = None) -> Trace:
    """Raise TraceFormatError unless every size in `trace` agrees with its data and the caps."""
    limits = limits or Limits()
    m = trace.model
    known = 0 if m.source == "served" else 1       # a served model's shape may be unknown (0)
    _between(m.layers, known, MAX_LAYERS, "model.layers")
    _between(m.heads, known, MAX_HEADS, "model.heads")
    _between(m.kv_heads, known, m.heads, "model.kv_heads")
    _between(m.vocab_size, 1, MAX_VOCAB, "model.vocab_size")
    _between(m.context_length, known, MAX_CONTEXT, "model.context_length")
    for name in ("head_dim", "hidden_size", "parameters", "parameter_bytes"):
        _between(getattr(m, name), 0, 10**15, f"model.{name}")

    s = trace.settings
    _between(s.max_new_tokens, 1, 10**7, "settings.max_new_tokens")
    _between(s.top_candidates, 1, limits.max_top_candidates, "settings.top_candidates")

    p = trace.prompt
    _between(len(p.raw), 0, 4 * limits.max_prompt_chars, "prompt.raw")
    _between(len(p.templated), 0, 4 * limits.max_prompt_chars + 100_000, "prompt.templated")
    _between(len(p.tokens), 0, 2 * limits.max_prompt_tokens, "prompt.tokens")
    _between(p.raw_token_count, 0, len(p.raw) * 4 + 16, "prompt.raw_token_count")
    for i, tok in enumerate(p.tokens):
        where = f"prompt.tokens[{i}]"
        _between(tok.id, 0, m.vocab_size - 1, f"{where}.id")
        _check(0 <= tok.start <= tok.end <= len(p.templated), where,
               f"span {tok.start}..{tok.end} is outside the {len(p.templated):,}-character text")
        _between(len(tok.text), 0, 1_000, f"{where}.text")
        _between(len(tok.bytes_hex), 0, 2_000, f"{where}.bytes_hex")

    if trace.prefill is not None:
        _check(trace.prefill.tokens == len(p.tokens), "prefill.tokens",
               f"says {trace.prefill.tokens:,} but the prompt has {len(p.tokens):,} tokens")
        _check(trace.prefill.ms >= 0 and trace.prefill.tokenize_ms >= 0, "prefill", "negative time")

    _between(len(trace.steps), 0, limits.max_new_tokens, "steps")
    _validate_steps(trace, trace.steps, 0, "steps")
    if trace.summary is not None:
        sm = trace.summary
        _check(sm.new_tokens == len(trace.steps), "summary.new_tokens",
               f"says {sm.new_tokens:,} but there are {len(trace.steps):,} steps")
        _check(sm.thinking_tokens + sm.answer_tokens <= sm.new_tokens and
               min(sm.thinking_tokens, sm.answer_tokens, sm.kv_bytes_final) >= 0,
               "summary", "token counts disagree with new_tokens")
        _check(sm.stop_reason in STOP_REASONS, "summary.stop_reason", f"{sm.stop_reason!r} is not one of {STOP_REASONS}")

    if trace.attention is not None:
        _validate_attention(trace, limits)
    _validate_branches(trace, limits)
    o = trace.observation
    if o is not None:           # the status line prints these; a file may claim anything
        _check(o.decode in ("eager", "compiled"), "observation.decode", f"{o.decode[:40]!r} is not eager or compiled")
        if o.decode == "compiled":
            _between(o.static_cache_tokens or 0, 1, MAX_CONTEXT, "observation.static_cache_tokens")
        if o.lens_capped_at is not None:
            _between(o.lens_capped_at, 0, len(trace.steps), "observation.lens_capped_at")
    if trace.served is not None:
        _validate_served(trace)
    return trace


def _validate_served(trace: Trace) -> None:
    """A served trace: its client times fit its steps, and it claims nothing a server hides."""
    sv = trace.served
    _check(trace.model.source == "served", "model.source", "a served trace must say source 'served'")
    _check(trace.attention is None and not trace.branches, "served", "a served trace holds no attention or branches")
    _between(sv.chunks, 0, len(trace.steps), "served.chunks")
    _between(len(sv.itl_ms), 0, max(sv.chunks - 1, 0), "served.itl_ms")
    _check(all(x >= 0 for x in sv.itl_ms), "served.itl_ms", "negative gap")
    for name in ("endpoint", "url", "api", "model", "sent"):
        _between(len(getattr(sv, name)), 0, 1_000, f"served.{name}")


def _validate_steps(trace: Trace, steps: list, first: int, name: str) -> None:
    """The steps of the run (first = 0) or of a branch (numbered on from its fork point)."""
    m, s, n_prompt = trace.model, trace.settings, len(trace.prompt.tokens)
    for i, st in enumerate(steps):
        where = f"{name}[{i}]"
        _check(st.index == first + i, f"{where}.index", f"is {st.index}, expected {first + i}")
        _between(st.id, 0, m.vocab_size - 1, f"{where}.id")
        _between(len(st.candidates), 0, s.top_candidates, f"{where}.candidates")
        _between(st.chosen_rank, 0, m.vocab_size - 1, f"{where}.chosen_rank")
        _between(st.kv_tokens, 0, n_prompt + first + i + 1, f"{where}.kv_tokens")
        _check(st.kv_bytes >= 0, f"{where}.kv_bytes", "is negative")
        _between(len(st.text), 0, 256, f"{where}.text")
        _between(len(st.token), 0, 1_000, f"{where}.token")
        _check(min(st.ms, st.t_ms, st.forward_ms, st.observe_ms, st.wait_ms) >= 0, where, "negative time")
        for c in st.candidates:
            _between(c.id, 0, m.vocab_size - 1, f"{where}.candidates.id")
            _between(len(c.text), 0, 1_000, f"{where}.candidates.text")
        if st.kept_tokens is not None:
            _between(st.kept_tokens, 1, m.vocab_size, f"{where}.kept_tokens")
        if st.kept_mass is not None:
            _between(st.kept_mass, 0, 1.0001, f"{where}.kept_mass")
        if st.lens is not None:
            _between(len(st.lens), 0, m.layers, f"{where}.lens")
            for g in st.lens:
                _between(g.layer, 0, m.layers - 1, f"{where}.lens.layer")
                _between(g.id, 0, m.vocab_size - 1, f"{where}.lens.id")
        if st.hidden is not None:       # the lens's input: projected through the model's head on view
            _validate_hidden(trace, st.hidden, f"{where}.hidden")


def _validate_hidden(trace: Trace, hidden, where: str) -> None:
    """A kept hidden-state block is [layers - 1, hidden_size] float32, its data exactly that size."""
    m = trace.model
    _check(list(hidden.shape) == [m.layers - 1, m.hidden_size] and m.hidden_size > 0, where,
           f"shape {hidden.shape!r:.60} is not [layers - 1 = {m.layers - 1}, hidden {m.hidden_size}]")
    _check(len(hidden.data) == 4 * (m.layers - 1) * m.hidden_size, where,
           f"holds {len(hidden.data):,} bytes, not {4 * (m.layers - 1) * m.hidden_size:,} (float32)")


def _validate_branches(trace: Trace, limits: Limits) -> None:
    """Each branch forks from the run or from an earlier branch, at a step its parent has, and its
    steps are numbered on from there and sized like the run's."""
    _between(len(trace.branches), 0, MAX_BRANCHES, "branches")
    lengths = {"": len(trace.steps)}            # tokens generated along each lineage
    total = 0
    for b_index, b in enumerate(trace.branches):
        where = f"branches[{b_index}]"
        _check(isinstance(b.id, str) and 0 < len(b.id) <= 32 and b.id not in lengths, f"{where}.id",
               "is empty, too long or used twice")
        _check(b.parent in lengths, f"{where}.parent", f"{b.parent[:32]!r} is not the run or an earlier branch")
        _between(b.at, 0, max(lengths[b.parent] - 1, 0), f"{where}.at")
        _between(b.token, 0, trace.model.vocab_size - 1, f"{where}.token")
        _between(b.settings.max_new_tokens, 1, limits.max_new_tokens, f"{where}.settings.max_new_tokens")
        _between(len(b.steps), 0, b.settings.max_new_tokens + 1, f"{where}.steps")
        _check(not b.steps or b.steps[0].id == b.token, f"{where}.steps[0]", "is not the chosen token")
        _validate_steps(trace, b.steps, b.at, f"{where}.steps")
        _between(b.reused_tokens, 0, len(trace.prompt.tokens) + b.at, f"{where}.reused_tokens")
        _check(min(b.copy_ms, b.cache_bytes, b.rebuilt_ms or 0, b.recompute_ms or 0) >= 0, where,
               "negative size or time")
        if b.summary is not None:
            _check(b.summary.new_tokens == max(len(b.steps) - 1, 0), f"{where}.summary.new_tokens",
                   f"says {b.summary.new_tokens:,} but the branch generated {max(len(b.steps) - 1, 0):,}")
            _check(b.summary.stop_reason in STOP_REASONS, f"{where}.summary.stop_reason",
                   f"{b.summary.stop_reason!r} is not one of {STOP_REASONS}")
        _validate_branch_rows(trace, b, where)
        for cap, name in ((b.attention_capped_at, "attention_capped_at"), (b.lens_capped_at, "lens_capped_at")):
            if cap is not None:
                _between(cap, b.at, b.at + len(b.steps), f"{where}.{name}")
        total += len(b.steps)
        lengths[b.id] = b.at + len(b.steps)
    _between(total, 0, MAX_BRANCHES * limits.max_new_tokens, "branches (all steps)")


def _validate_attention(trace: Trace, limits: Limits) -> None:
    a, m, n_prompt = trace.attention, trace.model, len(trace.prompt.tokens)
    n = a.prefill_tokens
    _between(n, 0, min(n_prompt, limits.attention_prompt_tokens), "attention.prefill_tokens")
    _check(len(a.prefill) in (0, m.layers), "attention.prefill",
           f"has {len(a.prefill)} blocks for {m.layers} layers")
    total = 0
    for i, block in enumerate(a.prefill):
        _check(list(block.shape) == [m.heads, n, n], f"attention.prefill[{i}]",
               f"shape {block.shape} is not [heads {m.heads}, {n}, {n}]")
        total += math.prod(block.shape)
    _between(len(a.steps), 0, len(trace.steps), "attention.steps")
    for i, block in enumerate(a.steps):
        keys = n_prompt + i
        _check(list(block.shape) == [m.layers, m.heads, keys], f"attention.steps[{i}]",
               f"shape {block.shape} is not [layers {m.layers}, heads {m.heads}, keys {keys}]")
        total += math.prod(block.shape)
    if a.steps_capped_at is not None:
        _between(a.steps_capped_at, 0, len(trace.steps), "attention.steps_capped_at")
    _check(total <= MAX_TOTAL_VALUES, "attention", f"unpacks to {total:,} values; the limit is {MAX_TOTAL_VALUES:,}")
    _validate_blocks(a.prefill + a.steps, "attention block")


def _validate_branch_rows(trace: Trace, b, where: str) -> None:
    """A branch's rows: one per generated step at most, step `at + 1 + i`'s over P + at + 1 + i keys,
    only where the run kept attention, within the same total as the run's."""
    if not b.attention:
        return
    m, n_prompt = trace.model, len(trace.prompt.tokens)
    _check(trace.attention is not None, f"{where}.attention", "the run kept no attention")
    _between(len(b.attention), 0, max(len(b.steps) - 1, 0), f"{where}.attention")
    for i, block in enumerate(b.attention):
        keys = n_prompt + b.at + 1 + i
        _check(list(block.shape) == [m.layers, m.heads, keys], f"{where}.attention[{i}]",
               f"shape {block.shape} is not [layers {m.layers}, heads {m.heads}, keys {keys}]")
    total = sum(math.prod(block.shape) for block in b.attention)
    _check(total <= MAX_TOTAL_VALUES, f"{where}.attention", f"unpacks to {total:,} values; the limit is {MAX_TOTAL_VALUES:,}")
    _validate_blocks(b.attention, f"{where}.attention block")


def _validate_blocks(blocks: list, name: str) -> None:
    for i, block in enumerate(blocks):
        _check(block.codec in ("zstd", "zlib"), f"{name} {i}", "codec is not zstd or zlib")
        # zstd data declares its size; zlib cannot expand more than ~1032x. Either way a block whose
        # data cannot hold its shape is a lie, found before anything is inflated.
        need = 2 * math.prod(block.shape)
        fits = block.stored_size() == need if block.codec == "zstd" else len(block.data) * 1032 + 64 >= need
        _check(fits, f"{name} {i}", "its data is too small for its shape")
