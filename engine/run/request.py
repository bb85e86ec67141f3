"""Checking a request before any model work: every rejection is an InvalidRequest saying what to change."""

from __future__ import annotations

import dataclasses
import math
import re

from engine.environment import Limits
from engine.errors import InvalidRequest
from engine.schema.trace import Settings

LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
MODES = ("normal", "reasoning")
# What the Explore tab runs unless the visitor changes it; `python -m engine bench` measures
# the cost of exactly these settings (app_default_ratio). The logit lens is on: the run only keeps
# each layer's last hidden state (a copy); projecting them through the LM head (1.6 GFLOP a step for
# SmolLM2-135M, six times its own forward pass) happens on view and at export (engine/model/lens.py).
APP_DEFAULTS = Settings(max_new_tokens=48, attention=True, logit_lens=True)


@dataclasses.dataclass(frozen=True)
class Playground:
    """The sampling playground's knobs before a visitor moves them (Explore 8, the walkthrough's
    sampling step, the deck, /export's playground chart): both cuts already at work on first view."""
    temperature: float = 1.0
    top_k: int = 10
    top_p: float = 0.9
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class SideBySide:
    """Normal vs reasoning mode (chapter 7, /compare, the walkthrough's live run): the thinking
    budget and the answer's tokens after it. The recordings are made with these
    (assets/traces/manifest.json: --thinking-budget 48, --max-new-tokens 88 = 48 + 40)."""
    thinking_budget: int = 48
    answer_tokens: int = 40


PLAYGROUND = Playground()
SIDE_BY_SIDE = SideBySide()


def clean_prompt(prompt, limits: Limits) -> str:
    """The prompt as it will be tokenized. Lone surrogates (not encodable) become U+FFFD."""
    if not isinstance(prompt, str):
        raise InvalidRequest("the prompt must be text", "prompt_not_text")
    if not prompt.strip():
        raise InvalidRequest("the prompt is empty: type something to send to the model", "prompt_empty")
    if len(prompt) > limits.max_prompt_chars:
        chars, limit = f"{len(prompt):,}", f"{limits.max_prompt_chars:,}"
        raise InvalidRequest(f"the prompt has {chars} characters; the limit is {limit}. Shorten it.",
                             "prompt_too_long", chars=chars, limit=limit)
    return LONE_SURROGATE.sub("\ufffd", prompt)


def number(name: str, value, lo: float = -math.inf, hi: float = math.inf, integer: bool = False,
           lo_open: bool = False) -> int | float:
    """`value` as an int (`integer`) or a float, if it is a finite number in [lo, hi] (lo excluded
    when `lo_open`); whole numbers may come as floats (sliders send 48.0). The one number check of
    the engine, the page (ui/chapters/run.py) and the API (ui/api/)."""
    got = repr(value)[:40]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequest(f"{name} must be a number, got {got}", "not_number", name=name, got=got)
    if not math.isfinite(value):
        raise InvalidRequest(f"{name} must be a finite number, got {got}", "not_finite", name=name, got=got)
    if integer and value != int(value):
        raise InvalidRequest(f"{name} must be a whole number, got {got}", "not_whole", name=name, got=got)
    if value < lo or value > hi or (lo_open and value == lo):
        bound = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
        raise InvalidRequest(f"{name} must be in {bound}, got {got}", "out_of_range", name=name, bound=bound,
                             got=got)
    return int(value) if integer else float(value)


def flag(name: str, value) -> bool:
    """`value` if it is true or false (not 1, not "yes")."""
    if not isinstance(value, bool):
        got = repr(value)[:40]
        raise InvalidRequest(f"{name} must be true or false, got {got}", "not_flag", name=name, got=got)
    return value


def check_settings(settings: Settings, limits: Limits) -> Settings:
    """A validated copy of `settings`; raises InvalidRequest naming the first bad field."""
    if not isinstance(settings, Settings):
        raise InvalidRequest("settings must be a Settings object")
    s = dataclasses.replace(settings)
    s.max_new_tokens = number("max_new_tokens", s.max_new_tokens, 1, limits.max_new_tokens, True)
    s.temperature = number("temperature", s.temperature, 0, 100, False)
    s.top_k = number("top_k", s.top_k, 0, 10_000_000, True)
    s.top_p = number("top_p", s.top_p, 0, 1, False, lo_open=True)
    s.seed = number("seed", s.seed, 0, 2**63 - 1, True)
    s.top_candidates = number("top_candidates", s.top_candidates, 1, limits.max_top_candidates, True)
    s.thinking_budget = number("thinking_budget", s.thinking_budget, 0, limits.max_new_tokens, True)
    for name in ("use_cache", "chat_template", "attention", "logit_lens", "ignore_eos", "answer_cue"):
        flag(name, getattr(s, name))
    if s.mode not in MODES:
        raise InvalidRequest(f"mode must be one of {', '.join(MODES)}, got {s.mode!r}")
    if (not isinstance(s.stop, list) or len(s.stop) > 8
            or not all(isinstance(x, str) and 0 < len(x) <= 100 for x in s.stop)):
        raise InvalidRequest("stop must be a list of at most 8 non-empty strings of up to 100 characters")
    s.stop = [LONE_SURROGATE.sub("\ufffd", x) for x in s.stop]
    return s


def check_length(prompt_tokens: int, settings: Settings, limits: Limits, context: int) -> None:
    """Reject prompts that the model or the host cannot hold, once we know their token count."""
    tokens = f"{prompt_tokens:,}"
    if prompt_tokens > limits.max_prompt_tokens:
        limit = f"{limits.max_prompt_tokens:,}"
        raise InvalidRequest(f"the prompt is {tokens} tokens; the limit is {limit}. Shorten it.",
                             "prompt_too_many_tokens", tokens=tokens, limit=limit)
    if prompt_tokens + settings.max_new_tokens > context:
        new, most = f"{settings.max_new_tokens:,}", f"{context:,}"
        raise InvalidRequest(f"{tokens} prompt tokens + {new} new tokens exceed the model's context of {most} "
                             "tokens. Shorten the prompt or ask for fewer new tokens.",
                             "context_exceeded", prompt=tokens, new=new, context=most)
    if settings.attention and prompt_tokens > limits.attention_max_prompt_tokens:
        limit = f"{limits.attention_max_prompt_tokens:,}"
        raise InvalidRequest(f"attention capture works on prompts up to {limit} tokens; this one has {tokens}. "
                             "Turn attention off or shorten it.", "attention_too_long", limit=limit, tokens=tokens)
