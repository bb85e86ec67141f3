"""The requests' protocol (engine/run/protocol.py): every limit is declared once, on its field, and a
dropped one fails here; every refusal is one sentence in the caller's language, naming the setting in
words (never a field name, never a Python type's name such as NoneType)."""

import dataclasses
import inspect
import math
import re

import pytest

from engine.environment import Limits
from engine.errors import InvalidRequest
from engine.run import protocol
from engine.run.protocol import (CompareArgs, ForkArgs, RunSettings, TraceArgs, checked)
from engine.run.request import check_settings
from engine.schema.trace import Settings
from ui.host.errors import message

# (field, the last value accepted, the first refused) at both ends of every bounded setting
EDGES = [
    ("max_new_tokens", 1, 0), ("max_new_tokens", 1_024, 1_025),
    ("temperature", 0.0, -0.001), ("temperature", 100.0, 100.001),
    ("top_k", 0, -1), ("top_k", 10_000_000, 10_000_001),
    ("top_p", 1e-9, 0.0), ("top_p", 1.0, 1.0001),
    ("seed", 0, -1), ("seed", 2**63 - 1, 2**63),
    ("thinking_budget", 0, -1), ("thinking_budget", 1_024, 1_025),
    ("top_candidates", 1, 0), ("top_candidates", 100, 101),
]


@pytest.mark.parametrize("field, kept, refused", EDGES, ids=[f"{f}={r}" for f, _, r in EDGES])
def test_every_bound_is_held(field, kept, refused):
    check_settings(Settings(**{field: kept}), Limits())
    with pytest.raises(InvalidRequest, match=rf"^{field} must be in [\[(]") as info:
        check_settings(Settings(**{field: refused}), Limits())
    assert info.value.key == "out_of_range"


def test_the_host_caps_are_the_bounds():
    """A host that lowers its caps lowers the model's bounds (they come in as the validation's context)."""
    small = Limits(max_new_tokens=10, max_top_candidates=25)
    for field, most in (("max_new_tokens", 10), ("thinking_budget", 10), ("top_candidates", 25)):
        within = {"max_new_tokens": 5, field: most}         # the default 64 new tokens is over this host's 10
        assert getattr(check_settings(Settings(**within), small), field) == most
        with pytest.raises(InvalidRequest, match=rf"{field} must be in \[\d, {most}\]"):
            check_settings(Settings(**{**within, field: most + 1}), small)
    with pytest.raises(InvalidRequest, match=r"max_new_tokens must be in \[1, 10\]"):
        checked(TraceArgs, {"prompt": "x", "max_new_tokens": 11}, small)
    with pytest.raises(InvalidRequest, match=r"max_new_tokens must be in \[1, 10\]"):
        checked(ForkArgs, {"step": 0, "token": 1, "max_new_tokens": 11}, small)


def test_the_settings_model_is_the_settings_field_for_field():
    """RunSettings checks every field of Settings, in its order, with its defaults."""
    fields = dataclasses.fields(Settings)
    assert list(RunSettings.model_fields) == [f.name for f in fields]
    assert RunSettings().model_dump() == dataclasses.asdict(Settings())


@pytest.mark.parametrize("endpoint, model", [("trace", TraceArgs), ("compare", CompareArgs), ("fork", ForkArgs),
                                             ("profile", protocol.ProfileArgs), ("export", protocol.ExportArgs),
                                             ("serve", protocol.ServeArgs)])
def test_each_endpoint_has_one_model_of_its_arguments(endpoint, model):
    """Every argument an endpoint takes (but the trace file it reads, and the request) is a field of
    its model, and the model holds no other (/trace's: the rest of the run's settings, at their defaults)."""
    import importlib
    module = importlib.import_module(f"ui.api.{endpoint}")
    cls = next(v for k, v in vars(module).items() if k.endswith("Endpoint") and v.__module__ == module.__name__)
    taken = set(inspect.signature(getattr(cls, endpoint)).parameters) - {"self", "request"}
    if endpoint != "trace":
        taken -= {"trace"}                       # a file: read by ui/host/uploads.py, then its own model
    assert taken <= set(model.model_fields), taken - set(model.model_fields)
    beyond = set(model.model_fields) - taken
    assert beyond <= (set(RunSettings.model_fields) if endpoint == "trace" else set()), beyond


KINDS = {   # what a caller may send wrongly, and the sentence's key
    "text for a whole number": ({"seed": "48"}, "not_number"),
    "a flag for a whole number": ({"seed": True}, "not_number"),
    "null for a number": ({"temperature": None}, "not_number"),
    "a fraction for a whole number": ({"max_new_tokens": 2.5}, "not_whole"),
    "NaN": ({"temperature": math.nan}, "not_finite"),
    "NaN for a whole number": ({"seed": math.nan}, "not_finite"),
    "infinity": ({"top_p": math.inf}, "not_finite"),
    "1 for a flag": ({"attention": 1}, "not_flag"),
    "an unknown mode": ({"mode": "dreaming"}, "one_of"),
    "an empty stop string": ({"stop": [""]}, "stop_words"),
    "nine stop strings": ({"stop": ["a"] * 9}, "stop_words"),
}


@pytest.mark.parametrize("case", sorted(KINDS))
def test_a_wrong_kind_is_refused_with_its_sentence(case):
    values, key = KINDS[case]
    with pytest.raises(InvalidRequest) as info:
        check_settings(Settings(**values), Limits())
    assert info.value.key == key


def test_a_slider_whole_number_is_an_int_and_a_stop_surrogate_is_replaced():
    s = check_settings(Settings(max_new_tokens=48.0, seed=3.0, stop=["a\ud800"]), Limits())
    assert (s.max_new_tokens, s.seed, s.stop) == (48, 3, ["a\ufffd"])
    assert checked(TraceArgs, {"prompt": "broken \ud800 pair"}, Limits()).prompt == "broken \ufffd pair"     # raw JSON
    assert type(s.max_new_tokens) is int and type(s.seed) is int


SAID = [   # (request model, values) refused; each said in zh with the setting in words
    (TraceArgs, {"prompt": 12345}), (TraceArgs, {"prompt": "x", "model": None}),
    (TraceArgs, {"prompt": "x", "temperature": -1.0}), (TraceArgs, {"prompt": "x", "top_p": 0.0}),
    (TraceArgs, {"prompt": "x", "attention": "yes"}), (TraceArgs, {"prompt": "x", "max_new_tokens": None}),
    (CompareArgs, {"prompt": "x", "thinking_budget": -5, "answer_tokens": 8}),
    (CompareArgs, {"prompt": "x", "thinking_budget": 5, "answer_tokens": 0}),
    (CompareArgs, {"prompt": "x", "thinking_budget": 1000, "answer_tokens": 100}),
    (ForkArgs, {"step": 1.5, "token": 3}), (ForkArgs, {"token": 3}),
    (RunSettings, {"mode": "dreaming"}), (RunSettings, {"stop": "x"}),
]


@pytest.mark.parametrize("model, values", SAID, ids=[f"{m.__name__}{v}"[:60] for m, v in SAID])
def test_a_refusal_is_one_plain_sentence_in_each_language(model, values):
    with pytest.raises(InvalidRequest) as info:
        checked(model, values, Limits())
    exc = info.value
    assert message(exc, "en") == str(exc) and "\n" not in str(exc)        # the API's English: the field's name
    for lang in ("en", "zh"):
        said = message(exc, lang, plain=True)
        assert "NoneType" not in said and "Input should" not in said, said
        names = set(model.model_fields) & set(re.findall(r"[a-z]+(?:_[a-z]+)+|\b[a-z]+\b", said))
        assert not {n for n in names if "_" in n}, (said, names)            # no field name with its underscore
    zh = message(exc, "zh")
    assert re.search(r"[\u4e00-\u9fff]", zh) and zh.endswith("。") and zh.count("。") == 1, zh


def test_an_endpoint_with_its_own_lang_argument_is_checked():
    """The export endpoint takes a `lang` of its own (the chart's language) beside the caller's: the
    check took both as one argument and every /export call failed with a TypeError."""
    from engine.run.protocol import ExportArgs
    from ui.api.args import arguments
    a = arguments(ExportArgs, "zh", Limits(), chart="timeline", format="png", lang="en", step=-1, layer=-1, head=-1)
    assert a.lang == "en" and a.chart == "timeline"


def test_compare_s_two_numbers_are_bounded_each_and_together_under_the_host_s_cap():
    """/compare's reasoning run generates thinking_budget + answer_tokens: each is refused by its own
    name above the host's cap, and the two together above it by both names (the refusal named
    max_new_tokens, a field the caller never sent, once the run's settings were checked)."""
    small = Limits(max_new_tokens=64)
    for values, names in (({"thinking_budget": 10**9, "answer_tokens": 8}, "thinking_budget must be in [0, 64]"),
                          ({"thinking_budget": 8, "answer_tokens": 65}, "answer_tokens must be in [1, 64]"),
                          ({"thinking_budget": 40, "answer_tokens": 30}, "thinking_budget + answer_tokens")):
        with pytest.raises(InvalidRequest, match=re.escape(names)) as info:
            checked(CompareArgs, {"prompt": "x", **values}, small)
        assert "max_new_tokens" not in str(info.value)
    assert checked(CompareArgs, {"prompt": "x", "thinking_budget": 40, "answer_tokens": 24}, small).answer_tokens == 24


def test_a_request_is_never_checked_against_default_caps():
    """The bounds that are the host's caps come from the host's Limits; a check without them is a
    mistake in the code, not a default (a host that lowered TBT_MAX_NEW_TOKENS was checked at 1024)."""
    with pytest.raises(TypeError):
        checked(TraceArgs, {"prompt": "x", "max_new_tokens": 5}, None)
    from ui.api.args import arguments
    with pytest.raises(TypeError):
        arguments(TraceArgs, "en", prompt="x")           # no limits: the endpoints pass their host's
