"""Reasoning mode: the model writes a chain of thought inside <think>...</think>, then answers.

Three ways a model gets there, found by rendering its own chat template (never by its name):
  - "switch":   the template takes `enable_thinking` (Qwen3): on for reasoning, off for normal;
  - "tags":     the template itself opens "<think>" after the generation prompt (R1 distills);
  - "scaffold": the model has no thinking of its own (the embedded SmolLM2): we open the assistant
                turn with "<think>" and a think-step-by-step cue. The page calls this "scaffolded
                thinking" so nobody takes it for a trained reasoning model.
A thinking budget caps the thinking tokens: when it is spent (or the model tries to end the turn
while still thinking), the engine forces the closing delimiter, and for the scaffold an answer
cue, as the s1 paper's "budget forcing" does; then the model answers.
"""

from __future__ import annotations

from engine.schema.trace import Settings

OPEN, CLOSE = "<think>", "</think>"
SCAFFOLD_OPEN = "<think>\nLet me think step by step.\n"
FORCED_CLOSE = "\n</think>\n\n"
SCAFFOLD_ANSWER_CUE = "Final answer:"


def thinking_style(tokenizer) -> str:
    """"switch", "tags" or "scaffold", from what the chat template renders."""
    if not getattr(tokenizer, "chat_template", None):
        return "scaffold"
    messages = [{"role": "user", "content": "2+2?"}]
    try:
        on, off = (tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                                 enable_thinking=flag) for flag in (True, False))
    except Exception:  # a template that fails to render is treated as having no thinking
        return "scaffold"
    if on != off:
        return "switch"
    if _opens_thinking(on):
        return "tags"
    return "scaffold"


def _opens_thinking(text: str) -> bool:
    return text.rfind(OPEN) > text.rfind(CLOSE)


def reasoning_on(settings: Settings) -> bool:
    return settings.mode == "reasoning" and settings.thinking_budget > 0


def template_text(engine, prompt: str, settings: Settings, style: str) -> str:
    """The prompt as the model sees it, in normal or reasoning mode."""
    if not settings.chat_template:
        return prompt + (SCAFFOLD_OPEN if reasoning_on(settings) else "")
    thinking = reasoning_on(settings)
    if style == "switch":
        return engine.apply_template(prompt, settings, enable_thinking=thinking)
    text = engine.apply_template(prompt, settings)
    if style == "tags":
        return text if thinking else text + FORCED_CLOSE.lstrip("\n")   # pre-closed: answer directly
    if thinking:
        return text + SCAFFOLD_OPEN
    # normal mode asked as reasoning mode answers: after the same cue (an evaluation's fairness)
    return text + SCAFFOLD_ANSWER_CUE if settings.answer_cue else text


class Thinking:
    """Tracks the phase of each generated token and queues the forced tokens of budget forcing."""

    def __init__(self, engine, settings: Settings, style: str, templated: str):
        self.on = reasoning_on(settings)
        self.style = style
        self.budget = settings.thinking_budget
        self.encode = lambda text: engine.encode(text, templated=True)
        # "pending": a "switch" model decides itself whether its answer starts with <think>
        self.state = ("thinking" if _opens_thinking(templated) else "pending") if self.on else "answer"
        self.spent = 0                      # thinking tokens the model chose (forced ones excluded)
        self.queue: list[tuple[int, str]] = []   # (token id, phase) still to be forced
        self.text = ""
        self.since = 0                      # where the open thinking block starts in self.text

    def forced_token(self, sampled_is_eos: bool) -> tuple[int, str] | None:
        """The token to force at this step instead of the sampled one, with its phase."""
        if self.state == "thinking" and not self.queue and (sampled_is_eos or self.spent >= self.budget):
            self._close()
        return self.queue.pop(0) if self.queue else None

    def _close(self) -> None:
        self.queue += [(i, "thinking") for i in self.encode(FORCED_CLOSE)]
        if self.style == "scaffold":
            self.queue += [(i, "answer") for i in self.encode(SCAFFOLD_ANSWER_CUE)]

    def phase_of(self, text: str, forced_phase: str | None = None) -> str:
        """Phase of the token that emitted `text` (forced tokens bring their own); moves the state on."""
        if not self.on:
            return "answer"
        self.text += text
        if self.state == "pending":
            head = self.text.lstrip()
            if head.startswith(OPEN):
                self.state, self.since = "thinking", self.text.index(OPEN) + len(OPEN)
            elif OPEN.startswith(head):
                return "thinking"             # nothing yet, or a prefix of "<think>" so far
            else:
                self.state = "answer"         # the model answered without thinking
        if self.state == "answer":
            return forced_phase or "answer"
        if forced_phase is None:
            self.spent += 1
        if CLOSE in self.text[self.since:]:
            self.state = "answer"
            if self.style == "scaffold" and forced_phase is None:
                self.queue += [(i, "answer") for i in self.encode(SCAFFOLD_ANSWER_CUE)]
        return "thinking"
