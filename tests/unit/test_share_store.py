"""The store behind share links (engine/host/shared_runs.py): content-addressed, capped, least
recently used dropped first, and a run read back is checked as an upload is."""

import os

import pytest

from engine.errors import EngineError
from engine.host.shared_runs import SharedRuns, run_id
from engine.schema.trace import Trace
from tests.paths import ROOT

TRACE = Trace.from_json((ROOT / "assets" / "traces" / "en-next.json").read_text(encoding="utf-8"))
OTHERS = [Trace.from_json((ROOT / "assets" / "traces" / f"{name}.json").read_text(encoding="utf-8"))
          for name in ("zh-next", "en-normal", "en-reasoning", "zh-normal")]


def size(trace: Trace) -> int:
    return len(trace.to_json().encode("utf-8"))


def test_a_run_is_kept_by_its_content_and_read_back_whole(tmp_path):
    runs = SharedRuns(tmp_path, 10 * size(TRACE))
    key = runs.keep(TRACE)
    assert key == run_id(TRACE.to_json()) and len(key) == 32
    assert runs.keep(TRACE) == key and runs.ids() == [key]            # the same run is kept once
    back = runs.read(key)
    assert back.to_json() == TRACE.to_json()


def test_the_cap_drops_the_least_recently_used_first(tmp_path):
    cap = size(TRACE) + size(OTHERS[1]) + 10          # room for the first and the third, not all three
    runs = SharedRuns(tmp_path, cap)
    first = runs.keep(TRACE)
    second = runs.keep(OTHERS[0])
    runs.read(first)                        # used again: now the second is the older one
    third = runs.keep(OTHERS[1])
    assert runs.used_bytes() <= cap
    assert set(runs.ids()) == {first, third}
    with pytest.raises(EngineError) as gone:
        runs.read(second)
    assert gone.value.key == "share_gone"
    for t in [*OTHERS[:2], TRACE]:          # never more than the cap, whatever comes
        runs.keep(t)
        assert runs.used_bytes() <= cap


@pytest.mark.parametrize("key", ["", "abc", "../../etc/passwd", "F" * 32, "0" * 31 + "g", "0" * 33, None, 7])
def test_an_id_that_is_not_ours_is_refused_before_the_disk_is_read(tmp_path, key):
    with pytest.raises(EngineError) as refused:
        SharedRuns(tmp_path, 10**6).read(key)
    assert refused.value.key == "share_bad_id"


def test_a_file_changed_on_disk_is_gone_and_a_run_larger_than_the_cap_is_refused(tmp_path):
    runs = SharedRuns(tmp_path, 10 * size(TRACE))
    key = runs.keep(TRACE)
    path = tmp_path / f"{key}.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"steps"', '"steps" ', 1), encoding="utf-8")
    with pytest.raises(EngineError) as changed:
        runs.read(key)
    assert changed.value.key == "share_gone"
    with pytest.raises(EngineError) as big:
        SharedRuns(tmp_path / "small", size(TRACE) - 1).keep(TRACE)
    assert big.value.key == "share_too_big" and big.value.values["cap"]
    assert not (tmp_path / "small").exists() or not os.listdir(tmp_path / "small")


def test_a_kept_run_is_validated_when_read(tmp_path):
    """A file whose hash matches but whose content is not a valid trace (the host's folder was written
    by something else) is refused like a bad upload."""
    runs = SharedRuns(tmp_path, 10**6)
    text = '{"schema": "token-by-token/trace@3"}'
    key = run_id(text)
    (tmp_path / f"{key}.json").write_text(text, encoding="utf-8")
    with pytest.raises(EngineError):
        runs.read(key)
