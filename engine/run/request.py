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
# the cost of exactly these settings (app_default_ratio). The logit lens is opt-in: projecting
# every layer through the LM head is layers x vocab x hidden multiply-adds per step (1.6 GFLOP
# for SmolLM2-135M, six times its own forward pass), so on a CPU it cannot be near-free.
APP_DEFAULTS = Settings(max_new_tokens=48, attention=True, logit_lens=False)


def clean_prompt(prompt, limits: Limits) -> str:
    """The prompt as it will be tokenized. Lone surrogates (not encodable) become U+FFFD."""
    if not isinstance(prompt, str):
        raise InvalidRequest("the prompt must be text")
    if not prompt.strip():
        raise InvalidRequest("the prompt is empty: type something to send to the model")
    if len(prompt) > limits.max_prompt_chars:
        raise InvalidRequest(f"the prompt has {len(prompt):,} characters; the limit is "
                             f"{limits.max_prompt_chars:,}. Shorten it.")
    return LONE_SURROGATE.sub("\ufffd", prompt)


def _number(name: str, value, lo: float, hi: float, integer: bool, lo_open: bool = False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequest(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise InvalidRequest(f"{name} must be a finite number, got {value!r}")
    if integer and value != int(value):
        raise InvalidRequest(f"{name} must be a whole number, got {value!r}")
    if value < lo or value > hi or (lo_open and value == lo):
        bound = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
        raise InvalidRequest(f"{name} must be in {bound}, got {value!r}")
    return int(value) if integer else float(value)


def check_settings(settings: Settings, limits: Limits) -> Settings:
    """A validated copy of `settings`; raises InvalidRequest naming the first bad field."""
    if not isinstance(settings, Settings):
        raise InvalidRequest("settings must be a Settings object")
    s = dataclasses.replace(settings)
    s.max_new_tokens = _number("max_new_tokens", s.max_new_tokens, 1, limits.max_new_tokens, True)
    s.temperature = _number("temperature", s.temperature, 0, 100, False)
    s.top_k = _number("top_k", s.top_k, 0, 10_000_000, True)
    s.top_p = _number("top_p", s.top_p, 0, 1, False, lo_open=True)
    s.seed = _number("seed", s.seed, 0, 2**63 - 1, True)
    s.top_candidates = _number("top_candidates", s.top_candidates, 1, limits.max_top_candidates, True)
    s.thinking_budget = _number("thinking_budget", s.thinking_budget, 0, limits.max_new_tokens, True)
    for flag in ("use_cache", "chat_template", "attention", "logit_lens", "ignore_eos", "answer_cue"):
        if not isinstance(getattr(s, flag), bool):
            raise InvalidRequest(f"{flag} must be true or false")
    if s.mode not in MODES:
        raise InvalidRequest(f"mode must be one of {', '.join(MODES)}, got {s.mode!r}")
    if (not isinstance(s.stop, list) or len(s.stop) > 8
            or not all(isinstance(x, str) and 0 < len(x) <= 100 for x in s.stop)):
        raise InvalidRequest("stop must be a list of at most 8 non-empty strings of up to 100 characters")
    s.stop = [LONE_SURROGATE.sub("\ufffd", x) for x in s.stop]
    return s


def check_length(prompt_tokens: int, settings: Settings, limits: Limits, context: int) -> None:
    """Reject prompts that the model or the host cannot hold, once we know their token count."""
    if prompt_tokens > limits.max_prompt_tokens:
        raise InvalidRequest(f"the prompt is {prompt_tokens:,} tokens; the limit is "
                             f"{limits.max_prompt_tokens:,}. Shorten it.")
    if prompt_tokens + settings.max_new_tokens > context:
        raise InvalidRequest(f"{prompt_tokens:,} prompt tokens + {settings.max_new_tokens:,} new tokens "
                             f"exceed the model's context of {context:,} tokens. Shorten the prompt "
                             "or ask for fewer new tokens.")
    if settings.attention and prompt_tokens > limits.attention_max_prompt_tokens:
        raise InvalidRequest(f"attention capture works on prompts up to {limits.attention_max_prompt_tokens:,} "
                             f"tokens; this one has {prompt_tokens:,}. Turn attention off or shorten it.")
