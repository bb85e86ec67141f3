"""The requests' protocol: one pydantic model per request, every limit declared once on its field.

As vLLM's protocol.py does for its server: the engine's settings (`RunSettings`, the Settings of
schema/trace.py checked) and each API endpoint's arguments (`TraceArgs`, `CompareArgs`, ...) are
models, and a refusal is pydantic's first error said as an InvalidRequest with a catalogue key
(ui/host/errors.py says it in the visitor's language). The host's caps (Limits) come in as the
validation's context, so a host that lowers TBT_MAX_NEW_TOKENS lowers the model's bound.

Strict: JSON has one number type, so a whole number may come as 48.0 (a slider), but never as
"48", true or 2.5; a flag is true or false, never 1 or "yes"; no NaN or infinity anywhere.
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError, core_schema

from engine.environment import Limits
from engine.errors import InvalidRequest
from engine.schema.trace import Settings

D = Settings()


def _slider(value):
    """48.0 is the whole number 48 (sliders and JSON send floats); 2.5 and NaN stay, to be refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _encodable(value):
    """Text with a lone surrogate (raw JSON may carry one; it cannot be encoded) keeps U+FFFD in its place."""
    return LONE_SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value


@dataclasses.dataclass(frozen=True)
class UpTo:
    """At most the host's cap `Limits.<cap>`, read from the validation's context."""
    cap: str

    def __get_pydantic_core_schema__(self, source, handler):
        return core_schema.with_info_after_validator_function(self.check, handler(source))

    def check(self, value, info):
        most = getattr(host_limits(info), self.cap)
        if value > most:
            raise PydanticCustomError("less_than_equal", "Input should be less than or equal to {le}", {"le": most})
        return value


def host_limits(info) -> Limits:
    """The host's caps, which every validation is given (`checked`); never a default in their place."""
    limits = (info.context or {}).get("limits")
    if not isinstance(limits, Limits):
        raise TypeError("requests are validated with the host's Limits as context: use protocol.checked")
    return limits


# The kinds of value, and every bound (static, or the host's cap), in one place.
Whole = Annotated[int, BeforeValidator(_slider)]
NewTokens = Annotated[Whole, Ge(1), UpTo("max_new_tokens")]
Temperature = Annotated[float, Ge(0), Le(100)]
TopK = Annotated[Whole, Ge(0), Le(10_000_000)]
TopP = Annotated[float, Gt(0), Le(1)]
Seed = Annotated[Whole, Ge(0), Le(2**63 - 1)]
Budget = Annotated[Whole, Ge(0), UpTo("max_new_tokens")]
Candidates = Annotated[Whole, Ge(1), UpTo("max_top_candidates")]
Text = Annotated[str, BeforeValidator(_encodable)]
STOP_WORDS, STOP_CHARS = 8, 100
StopWord = Annotated[Text, Field(min_length=1, max_length=STOP_CHARS)]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid", frozen=True)


class RunSettings(Strict):
    """Settings (engine/schema/trace.py), field for field and in its order, with their bounds."""
    max_new_tokens: NewTokens = D.max_new_tokens
    temperature: Temperature = D.temperature
    top_k: TopK = D.top_k
    top_p: TopP = D.top_p
    seed: Seed = D.seed
    use_cache: bool = D.use_cache
    chat_template: bool = D.chat_template
    mode: Literal["normal", "reasoning"] = D.mode
    thinking_budget: Budget = D.thinking_budget
    answer_cue: bool = D.answer_cue
    attention: bool = D.attention
    logit_lens: bool = D.logit_lens
    ignore_eos: bool = D.ignore_eos
    stop: Annotated[list[StopWord], Field(max_length=STOP_WORDS)] = []
    top_candidates: Candidates = D.top_candidates


class TraceArgs(RunSettings):
    """/trace: a prompt, the page's eight settings, a model ("" is the host's default)."""
    prompt: Text
    model: Text = ""


class CompareArgs(Strict):
    """/compare: one question in normal and reasoning mode; the reasoning run's tokens (its budget
    and the answer's) are at most the host's cap, each field and the two together."""
    prompt: Text
    thinking_budget: Budget
    answer_tokens: NewTokens
    model: Text = ""

    @model_validator(mode="after")
    def _within_the_cap(self, info):
        most = host_limits(info).max_new_tokens
        if self.thinking_budget + self.answer_tokens > most:
            raise PydanticCustomError("sum_too_large", "thinking_budget + answer_tokens must be at most {most}",
                                      {"most": most, "total": self.thinking_budget + self.answer_tokens})
        return self


class ForkArgs(Strict):
    """/fork: the step and the token to fork with (the fork checks them against the trace)."""
    step: Whole
    token: Whole
    parent: Text = ""
    max_new_tokens: NewTokens = D.max_new_tokens
    recompute: bool = False
    model: Text = ""


class ProfileArgs(Strict):
    step: Whole = 0
    model: Text = ""


class ExportArgs(Strict):
    """/export: which chart (its name, format and language are checked against what it can draw)."""
    chart: Text
    format: Text
    lang: Text
    step: Whole
    layer: Whole
    head: Whole


class ServeArgs(Strict):
    """/serve: the workload's kinds; its ranges are the serving floor's (engine/floor/workload.py)."""
    requests: Whole
    rate: float
    prompt_tokens: Whole
    shared_prefix: Whole
    new_tokens: Whole
    page_size: Whole
    num_blocks: Whole
    max_batch_tokens: Whole
    scheduler: Text
    seed: Whole
    model: Text = ""


def checked(kind: type[Strict], values: dict, limits: Limits) -> Any:
    """`values` as a `kind` of request under the host's `limits`, or the InvalidRequest that says its
    first problem."""
    try:
        return kind.model_validate(values, context={"limits": limits})
    except ValidationError as exc:
        raise refusal(kind, exc.errors()[0], limits) from None


def shown(value) -> str:
    """A value as the caller sent it, in JSON's words (null, true), cut short."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float, str)):
        return repr(value)[:40]
    return {list: "a list", dict: "an object"}.get(type(value), "another kind of value")


def bounds(model: type[Strict], name: str, limits: Limits) -> tuple[Any, Any, bool]:
    """The field's (lowest, highest, lowest excluded), read from its declaration; None where open."""
    lo, hi, lo_open = None, None, False
    for m in model.model_fields[name].metadata:
        if isinstance(m, Ge):
            lo = m.ge
        elif isinstance(m, Gt):
            lo, lo_open = m.gt, True
        elif isinstance(m, Le):
            hi = m.le if hi is None else min(hi, m.le)
        elif isinstance(m, UpTo):
            hi = getattr(limits, m.cap) if hi is None else min(hi, getattr(limits, m.cap))
    return lo, hi, lo_open


def refusal(model: type[Strict], error: dict, limits: Limits) -> InvalidRequest:
    """pydantic's error as the engine's refusal: the same sentence (and key) for the same mistake."""
    kind, value = error["type"], error.get("input")
    name = str(error["loc"][0]) if error["loc"] else "request"
    got = shown(value)
    if kind == "string_type":
        return InvalidRequest(f"{name} must be text, got {got}", "not_text", name=name, got=got)
    if kind == "bool_type":
        return InvalidRequest(f"{name} must be true or false, got {got}", "not_flag", name=name, got=got)
    whole_kind = kind == "int_type" and isinstance(value, float)      # 2.5, NaN (a bool is no float)
    if kind == "finite_number" or (whole_kind and not math.isfinite(value)):
        return InvalidRequest(f"{name} must be a finite number, got {got}", "not_finite", name=name, got=got)
    if whole_kind:
        return InvalidRequest(f"{name} must be a whole number, got {got}", "not_whole", name=name, got=got)
    if kind in ("int_type", "float_type"):
        return InvalidRequest(f"{name} must be a number, got {got}", "not_number", name=name, got=got)
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return _out_of_range(name, got, *bounds(model, name, limits))
    if kind == "literal_error":
        choices = ", ".join(typing.get_args(model.model_fields[name].annotation))
        return InvalidRequest(f"{name} must be one of {choices}, got {got}", "one_of", name=name, choices=choices,
                              got=got)
    if kind == "sum_too_large":
        most, total = error["ctx"]["most"], error["ctx"]["total"]
        return InvalidRequest(f"thinking_budget + answer_tokens must be at most {most}, got {total}", "sum_too_large",
                              most=most, got=total)
    if kind == "missing":
        return InvalidRequest(f"{name} is missing", "missing", name=name)
    if name == "stop":
        return InvalidRequest(f"stop must be a list of at most {STOP_WORDS} non-empty strings of up to {STOP_CHARS} "
                              "characters", "stop_words", most=STOP_WORDS, chars=STOP_CHARS)
    return InvalidRequest(f"{name} is not acceptable, got {got}", "not_acceptable", name=name, got=got)


def _out_of_range(name: str, got: str, lo, hi, lo_open: bool) -> InvalidRequest:
    if hi is None:          # only a floor: a count
        return InvalidRequest(f"{name} must be a whole number of at least {lo}, got {got}", "at_least", name=name,
                              lo=lo, got=got)
    bound = f"({lo}, {hi}]" if lo_open else f"[{lo}, {hi}]"
    return InvalidRequest(f"{name} must be in {bound}, got {got}", "out_of_range", name=name, bound=bound, got=got)
