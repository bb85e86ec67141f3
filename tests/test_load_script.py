"""The load script (`python -m tests.load`, run by hand: `make load`) at a tiny size against the
live test server, so it cannot rot: concurrent traces match their sequential references."""

from tests.load import inputs, run_load


def test_small_load_matches_sequential_runs(app_url):
    result = run_load(app_url, clients=3, runs=2, tokens=6, timeout_s=300)
    assert result["requests"] == 6 and result["errors"] == 0, result
    assert result["all_match_sequential"], result


def test_inputs_mix_greedy_and_seeded_sampling():
    requests = inputs(2, 2, 8)
    assert {r["temperature"] for r in requests} == {0.0, 0.8}
    assert len({r["seed"] for r in requests}) == 4
