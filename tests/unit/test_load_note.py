"""Results measured on a busy machine say so: the lab's experiments and the serving floor's ways are
watched (engine/lab/host.py: /proc/stat's other work and CPU steal, the load average, the job's
pauses for visitors left out), and the page says how busy it was and what that did, en and zh."""

from __future__ import annotations

import copy
import json

import pytest

from engine.errors import TraceFormatError
from engine.lab.host import LoadWatch, watching_load
from engine.schema.floor import MODES
from engine.schema.floor_check import check_floor, read_floor
from engine.schema.load import HostLoad, is_busy
from ui.chapters.floor import views
from ui.chapters.lab import note_md
from ui.host import recordings
from viz.text.load_note import bandwidth_load_note, floor_load_note, load_note

BUSY = HostLoad(seconds=12.0, cpus=2, others=0.62, steal=0.04, load_1m=5.3)
QUIET = HostLoad(seconds=12.0, cpus=2, others=0.03, steal=0.0, load_1m=1.1)


def sample(total, busy, steal, own, paused=0.0, t=0.0, cpus=2):
    return (total, busy, steal, cpus), own, paused, t


def test_the_watch_counts_other_work_apart_from_its_own_and_leaves_pauses_out():
    watch = LoadWatch()
    watch._add(sample(0, 0, 0, 0), sample(200, 180, 10, 50, t=1.0))           # 1 s: 200 ticks of 2 CPUs
    watch._add(sample(200, 180, 10, 50, t=1.0), sample(400, 220, 10, 90, paused=0.5, t=2.0))   # stood still: left out
    watch._add(sample(400, 220, 10, 90, paused=0.5, t=2.0), sample(600, 300, 10, 150, paused=0.5, t=3.0))
    found = watch.result()
    # other work: busy 180 + 80, less steal 10 and its own 50 + 60 -> 140 of 400 ticks
    assert found["others"] == pytest.approx(140 / 400, abs=1e-3) and found["steal"] == pytest.approx(10 / 400, abs=1e-3)
    assert found["seconds"] == pytest.approx(2.0) and found["cpus"] == 2 and found["load_1m"] >= 0


def test_the_watch_reads_this_machine():
    with watching_load() as watch:
        sum(range(200_000))
    found = watch.result()
    assert found is None or (0 <= found["others"] <= 1 and 0 <= found["steal"] <= 1 and found["cpus"] >= 1)


def test_nothing_is_said_on_a_quiet_machine():
    assert not is_busy(QUIET) and load_note(QUIET, "en") == "" and load_note(None, "zh") == ""


@pytest.mark.parametrize("lang,words", [("en", ("busy", "62%", "2 cores", "4%", "5.3", "longer")),
                                        ("zh", ("很忙", "62%", "2 个核心", "4%", "5.3", "偏长"))])
def test_a_busy_measurement_says_how_busy_and_what_that_did(lang, words):
    said = load_note(BUSY, lang)
    assert all(w in said for w in words), said
    assert load_note({"others": 0.3, "steal": 0.0, "cpus": 4, "load_1m": 4.0}, lang)      # a lab section's dict
    assert "steal" not in load_note(HostLoad(1.0, 2, 0.5, 0.001, 3.0), "en")            # under 1 %: unsaid


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lab_note_carries_the_warning_of_its_own_section(lang):
    results = copy.deepcopy(recordings.lab())
    quiet = note_md(results, "kv_cache", lang)
    results["kv_cache"]["load"] = {"seconds": 30.0, "cpus": 2, "others": 0.55, "steal": 0.0, "load_1m": 4.2}
    busy = note_md(results, "kv_cache", lang)
    assert busy.startswith(quiet) and load_note(results["kv_cache"]["load"], lang) in busy
    assert not quiet.startswith("**")                                # the reading is not a paragraph in bold


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_floor_says_which_way_met_the_load(lang):
    floor = copy.deepcopy(recordings.floor())
    assert floor_load_note(floor, lang) == ""                        # the recording: nobody watched
    for name, others in zip(MODES, (0.05, 0.71, 0.10)):
        floor.mode(name).load = HostLoad(seconds=8.0, cpus=2, others=others, steal=0.0, load_1m=3.4)
    said = floor_load_note(floor, lang)
    assert "71%" in said and "5%" in said and "10%" in said, said
    verdict = views(floor, lang, False)[0]
    assert said in verdict


def test_a_floor_file_with_an_impossible_load_is_refused():
    text = (recordings.ASSETS / "floor" / "recorded.json").read_text(encoding="utf-8")
    data = json.loads(text)
    data["modes"][0]["load"] = {"seconds": 1.0, "cpus": 2, "others": 7.0, "steal": 0.0, "load_1m": 1.0}
    with pytest.raises(TraceFormatError, match="others"):
        read_floor(json.dumps(data))
    data["modes"][0]["load"]["others"] = 0.5
    assert check_floor(read_floor(json.dumps(data))).modes[0].load.others == 0.5


@pytest.mark.parametrize("lang,words", [("en", ("bandwidth (7.9 GB/s)", "busy", "too high")),
                                        ("zh", ("带宽（7.9 GB/s）", "很忙", "偏高"))])
def test_the_roofline_says_when_its_bandwidth_was_measured_on_a_busy_machine(lang, words):
    results = copy.deepcopy(recordings.lab())
    machine = next(h for h in results["roofline"]["hardware"] if h.get("measured"))
    assert bandwidth_load_note(results["roofline"], lang) == ""          # the recording: nobody watched
    machine.update(bandwidth_bytes_s=7.9e9, load={"seconds": 2.0, "cpus": 2, "others": 0.8, "steal": 0.0,
                                                  "load_1m": 6.0})
    said = bandwidth_load_note(results["roofline"], lang)
    assert all(w in said for w in words), said
    assert said in note_md(results, "roofline", lang)


def test_the_host_figures_keep_the_load_they_were_measured_under(monkeypatch):
    import torch
    from engine.lab import host
    monkeypatch.setattr(host, "_KNOWN", {})
    monkeypatch.setattr(host, "read_bandwidth", lambda *a: 9.2e9)          # the watch, not the sums, is tested
    monkeypatch.setattr(host, "matmul_flops", lambda *a, **k: 1e11)
    found = host.figures("cpu", torch.float32)
    assert "load" in found and (found["load"] is None or 0 <= found["load"]["others"] <= 1)
    monkeypatch.setattr(host, "_KNOWN", {})
    assert host.adopt(found) and host.known("cpu", torch.float32)["load"] == found["load"]    # kept when adopted


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["roofline", "kv_cache"])
def test_a_recorded_result_says_the_load_it_was_recorded_under_or_that_it_kept_none(name, lang):
    """Issue 39 item 10: what a visitor first sees (the recording) says its load too, never nothing
    false: the shipped recording kept none, so it says so; a quiet one says quiet; a busy one warns once."""
    from ui.chapters.lab import recorded_md
    from viz.text.labels import label
    results = copy.deepcopy(recordings.lab())
    assert label("load_unrecorded", lang) in recorded_md(results, name, lang)      # the shipped recording
    assert label("load_unrecorded", lang) not in note_md(results, name, lang)      # a visitor's own result
    quiet = {"seconds": 9.0, "cpus": 2, "others": 0.04, "steal": 0.0, "load_1m": 0.3}
    results[name]["load"] = quiet
    said = recorded_md(results, name, lang)
    assert label("load_quiet", lang, others="4%", cpus=2) in said and label("load_unrecorded", lang) not in said
    results[name]["load"] = {**quiet, "others": 0.6}
    said = recorded_md(results, name, lang)
    assert load_note(results[name]["load"], lang) in said and label("load_quiet", lang, others="60%", cpus=2) not in said


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_recorded_floor_says_its_load_or_that_it_kept_none(lang):
    from viz.text.labels import label
    floor = copy.deepcopy(recordings.floor())
    assert label("load_unrecorded", lang) in views(floor, lang, True)[0]
    assert label("load_unrecorded", lang) not in views(floor, lang, False)[0]
    for name in MODES:
        floor.mode(name).load = HostLoad(seconds=8.0, cpus=2, others=0.03, steal=0.0, load_1m=0.2)
    assert label("load_quiet", lang, others="3%", cpus=2) in views(floor, lang, True)[0]
