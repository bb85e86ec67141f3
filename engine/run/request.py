"""Checking a request before any model work: every rejection is an InvalidRequest saying what to change."""

from __future__ import annotations

import dataclasses

from engine.environment import Limits
from engine.errors import InvalidRequest
from engine.run.protocol import LONE_SURROGATE, RunSettings, checked
from engine.schema.trace import Settings

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


def check_settings(settings: Settings, limits: Limits) -> Settings:
    """A checked copy of `settings` (whole numbers as ints), through the protocol's RunSettings, where
    every bound is declared; raises InvalidRequest naming the first bad field."""
    if not isinstance(settings, Settings):
        raise InvalidRequest("settings must be a Settings object")
    return Settings(**checked(RunSettings, dataclasses.asdict(settings), limits).model_dump())


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
