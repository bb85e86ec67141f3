"""The load script (`python -m tests.load`, run by hand: `make load`) at a tiny size against the
live test server, so it cannot rot: concurrent traces match their sequential references, with
attention capture and the logit lens on (where state shared between visitors would leak).
Its comparison and its inputs are checked without a server in tests/unit/test_load_script.py."""

from tests.load import run_load


def test_small_load_matches_sequential_runs(app_url):
    result = run_load(app_url, clients=3, runs=2, tokens=6, timeout_s=300)
    assert result["capture"] and result["requests"] == 6 and result["errors"] == 0, result
    assert result["all_match_sequential"], result
