"""The recordings the page opens on are one cached reading per process; every visitor gets a copy of
its own (ui/host/recordings.py), so what one visitor's state or view writes never reaches the next."""

import pytest

from ui.host import recordings


@pytest.mark.parametrize("read", [recordings.lab, recordings.evaluation, lambda: recordings.profile("en")],
                         ids=["lab", "evaluation", "profile"])
def test_a_recording_written_by_one_visitor_reads_as_the_file_for_the_next(read):
    first = read()
    assert first is not None and first is not read()
    key = next(iter(first))
    first[key] = "written by a visitor"
    first["added"] = [1, 2]
    again = read()
    assert again[key] != "written by a visitor" and "added" not in again


def test_the_floor_recording_is_a_copy_too():
    first = recordings.floor()
    assert first is not None
    assert first.lanes and first is not recordings.floor()
    first.lanes.clear()
    assert recordings.floor().lanes
