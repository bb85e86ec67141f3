"""The serving floor without a model: its file is read and checked like a trace, its settings are
refused with clear messages before any work, and its charts and sentences come from the file."""

import copy
import json

import pytest

from engine.environment import Limits
from engine.errors import InvalidRequest, TraceFormatError
from engine.floor.figures import figures
from engine.floor.workload import arrivals, check
from engine.schema.floor import FloorSettings
from engine.schema.floor_check import read_floor
from tests.paths import ROOT
from viz.charts import floor as fv
from viz.text.labels import label

RECORDED = (ROOT / "assets" / "floor" / "recorded.json").read_text(encoding="utf-8")
PER_TOKEN = 46_080          # SmolLM2-135M in fp32: 30 layers × 2 (K and V) × 3 KV heads × 64 × 4 bytes


def data() -> dict:
    return json.loads(RECORDED)


def test_the_recording_reads_and_holds_a_real_workload():
    f = read_floor(RECORDED)
    assert len(f.lanes) >= 8 and f.settings.arrival == "poisson"
    assert all(lane.same_as_generate for lane in f.lanes)
    # a block holds page_size positions of every layer's K and V: the allocator's size is the formula's
    assert f.cache.bytes_per_block == f.cache.page_size * PER_TOKEN
    assert f.unshared is not None and f.cache.peak_blocks < f.unshared.peak_blocks
    figs = figures(data())
    assert figs["continuous_vs_one_at_a_time"] >= 1.4
    assert figs["tokens_equal_generate"] == len(f.lanes)


def test_each_lane_agrees_with_the_summary_of_its_way():
    f = read_floor(RECORDED)
    c = f.mode("continuous")
    assert c.ttft_ms == [lane.ttft_ms for lane in f.lanes]
    assert c.tokens == sum(len(lane.tokens) for lane in f.lanes)
    for lane in f.lanes:
        assert lane.arrival_ms <= lane.start_ms <= lane.token_ms[0] <= lane.token_ms[-1] <= lane.end_ms + 1e-6
        assert lane.reused_tokens + sum(c[2] for c in lane.chunks) == lane.prompt_tokens


@pytest.mark.parametrize("tamper, where", [
    (lambda d: d["lanes"].pop(), "floor.settings.requests"),
    (lambda d: d["lanes"][0]["token_ms"].reverse(), "floor.lanes[0]"),
    (lambda d: d["lanes"][0]["tokens"].__setitem__(0, 10**9), "floor.lanes[0].tokens"),
    (lambda d: d["frames"][0]["tables"].append([1]), "floor.frames[0].tables"),
    (lambda d: d["frames"][0]["batch"].append([99, 1, 0]), "floor.frames[0].batch"),
    (lambda d: d["frames"][0].update(free_blocks=10**9), "floor.frames[0].free_blocks"),
    (lambda d: d["modes"].pop(), "floor.modes"),
    (lambda d: d["cache"].update(peak_blocks=-1), "floor.cache.peak_blocks"),
    (lambda d: d["lanes"][0].update(arrival_ms="soon"), "floor.lanes[0].arrival_ms"),
])
def test_a_hostile_file_is_refused_naming_the_field(tamper, where):
    d = copy.deepcopy(data())
    tamper(d)
    with pytest.raises(TraceFormatError) as caught:
        read_floor(json.dumps(d))
    assert where in str(caught.value)


def test_other_files_are_not_a_floor():
    for text in ("[]", "{}", '{"format": "tbt-floor", "version": 99}', "not json"):
        with pytest.raises(TraceFormatError):
            read_floor(text)
    with pytest.raises(TraceFormatError):
        read_floor(RECORDED, Limits(max_upload_bytes=1000))


@pytest.mark.parametrize("change, key", [
    (dict(requests=0), "floor_between"), (dict(page_size=0), "floor_between"),
    (dict(num_blocks=10**6), "floor_cache_too_big"), (dict(num_blocks=2), "floor_cache_too_small"),
    (dict(arrival="sometimes"), "floor_choice"), (dict(scheduler="lifo"), "floor_choice"),
    (dict(shared_prefix=500), "floor_between"), (dict(requests=True), "floor_between"),
])
def test_bad_settings_are_refused_before_any_work(change, key):
    with pytest.raises(InvalidRequest) as caught:
        check(FloorSettings(**change), Limits(), PER_TOKEN)
    assert caught.value.key == key


def test_the_refusals_have_sentences_in_both_languages():
    from ui.host.errors import message
    for change in (dict(requests=0), dict(num_blocks=10**6), dict(num_blocks=2), dict(scheduler="lifo")):
        with pytest.raises(InvalidRequest) as caught:
            check(FloorSettings(**change), Limits(), PER_TOKEN)
        zh = message(caught.value, "zh")
        assert zh != str(caught.value) and any("\u4e00" <= ch <= "\u9fff" for ch in zh), zh


def test_arrivals_are_a_burst_or_increasing_poisson_gaps():
    assert arrivals(FloorSettings(arrival="burst", requests=5)) == [0.0] * 5
    times = arrivals(FloorSettings(arrival="poisson", rate=4.0, requests=50, seed=3))
    assert times[0] == 0.0 and all(a < b for a, b in zip(times, times[1:]))
    assert 50 / 4.0 * 0.5 < times[-1] < 50 / 4.0 * 1.6          # about 12.5 s at 4 a second
    assert times == arrivals(FloorSettings(arrival="poisson", rate=4.0, requests=50, seed=3))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chart_and_sentence_is_drawn_from_the_file(lang):
    f = read_floor(RECORDED)
    for draw in (fv.lanes_chart, fv.blocks_chart, fv.step_cost_chart, fv.modes_chart):
        spec = draw(f, lang).to_dict()
        assert spec
    lanes = fv.lanes_chart(f, lang).to_dict()
    assert label("floor_lanes_title", lang, n=len(f.lanes)) in json.dumps(lanes, ensure_ascii=False)
    verdict = fv.verdict_md(f, lang)
    assert f"{f.mode('continuous').throughput:.1f}" in verdict
    ties = fv.ties_md(f, lang)
    assert str(f.cache.peak_blocks) in ties and str(f.unshared.peak_blocks) in ties


def test_shared_blocks_are_counted_once_in_the_blocks_chart():
    f = read_floor(RECORDED)
    frame = fv.blocks_frame(f)
    for t, rows in frame.groupby("t", sort=False):
        step = next(x for x in f.frames if x.start_ms / 1000 == t)
        held = {b for table in step.tables for b in table}
        assert rows["blocks"].sum() == len(held)      # every block once, shared or not
    shared = frame[frame["series"] == "shared"]["blocks"]
    assert shared.max() > 0


def test_the_verdict_says_slower_when_it_was():
    d = data()
    alone = d["modes"][1]
    alone["wall_ms"] = d["modes"][0]["wall_ms"] / 2          # one at a time twice as fast: not faster
    f = read_floor(json.dumps(d))
    assert "not faster" in fv.verdict_md(f, "en") and "并不比" in fv.verdict_md(f, "zh")
    assert "not faster" not in fv.verdict_md(read_floor(RECORDED), "en")


class Steps:
    """A floor reduced to its decode steps ({requests: [ms, ...]}), all `why_not_faster` reads."""
    def __init__(self, steps: dict[int, list[float]]):
        self.steps = steps

    def decode_steps(self):
        return self.steps


def test_why_it_was_not_faster_is_read_from_the_steps_not_assumed():
    """Not faster because the requests seldom shared a step, or because a shared step cost nearly a
    step per request, or (sharing cheap and still no gain) without a reason: never "sparse arrivals"
    for a burst that overlapped."""
    apart = Steps({1: [50.0] * 9, 2: [80.0] * 3})                  # 3 of 12 steps shared
    costly = Steps({1: [50.0] * 3, 4: [190.0] * 9})                # a step for 4 cost 3.8x one
    cheap = Steps({1: [50.0] * 3, 4: [70.0] * 9})                  # a step for 4 cost 1.4x one
    said = {name: {lang: fv.why_not_faster(s, lang) for lang in ("en", "zh")}
            for name, s in (("apart", apart), ("costly", costly), ("cheap", cheap))}
    assert "only 3 of its 12 decode steps" in said["apart"]["en"] and "只有 3 个" in said["apart"]["zh"]
    assert "a step for 4 requests cost 3.8×" in said["costly"]["en"] and "3.8 倍" in said["costly"]["zh"]
    assert "saved little" not in said["cheap"]["en"] and "saved no time" in said["cheap"]["en"]
    assert "省不了多少" in said["costly"]["zh"] and "省不了多少" not in said["cheap"]["zh"]
    for case in said.values():                                     # each reason in its own case only
        others = [v["en"] for v in said.values() if v is not case]
        assert all(case["en"] != o for o in others)
    d = data()
    d["settings"]["arrival"] = "burst"
    d["modes"][1]["wall_ms"] = d["modes"][0]["wall_ms"] / 2        # one at a time twice as fast
    f = read_floor(json.dumps(d))
    for lang in ("en", "zh"):
        verdict = fv.verdict_md(f, lang)
        assert fv.why_not_faster(f, lang) in verdict
        assert "sparse" not in verdict and "稀疏" not in verdict
