"""Reasoning mode in the style the chat template implies, found from the template's shape alone: the
same tiny model (one name) with each of the three templates."""

import pytest

from engine import Settings, run_trace
from engine.run.reasoning import FORCED_CLOSE, SCAFFOLD_OPEN, thinking_style
from tests.tiny.models import TEMPLATES

BUDGET = 3


@pytest.mark.parametrize("template", TEMPLATES)
def test_thinking_style_is_found_from_the_template(template, tiny_engine):
    engine = tiny_engine("qwen3", template)
    assert engine.thinking_style == thinking_style(engine.tokenizer) == template


@pytest.mark.parametrize("template", TEMPLATES)
def test_reasoning_mode_in_the_templates_style(template, tiny_engine):
    engine = tiny_engine("qwen3", template)
    settings = Settings(max_new_tokens=12, mode="reasoning", thinking_budget=BUDGET, ignore_eos=True)
    trace = run_trace(engine, "What is 2+2?", settings)
    normal = run_trace(engine, "What is 2+2?", Settings(max_new_tokens=2))
    assert trace.reasoning == template
    templated = trace.prompt.templated
    if template == "switch":      # the template itself pre-closes the think block when thinking is off
        assert "</think>" in normal.prompt.templated and "</think>" not in templated
    elif template == "tags":      # the template opens <think>; normal mode is pre-closed by the engine
        assert templated.endswith("<think>\n") and normal.prompt.templated.endswith(FORCED_CLOSE.lstrip("\n"))
    else:                         # the engine scaffolds the thinking
        assert templated.endswith(SCAFFOLD_OPEN) and "<think>" not in normal.prompt.templated
    if template != "switch":      # the think block is open: budget forcing closes it after BUDGET tokens
        phases = [s.phase for s in trace.steps]
        chosen = [s for s in trace.steps if s.phase == "thinking" and not s.forced]
        assert phases[0] == "thinking" and len(chosen) == BUDGET
        assert any(s.forced for s in trace.steps) and phases[-1] == "answer"
        assert "</think>" in "".join(s.text for s in trace.steps)
