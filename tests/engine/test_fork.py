"""Forking a run (engine/run/fork.py): a branch continues from step K with another token, reusing the
run's cached prefix. A greedy branch must equal a fresh `model.generate` from the same tokens; the
parent, its trace and its cache never change; two visitors' branches of one run stay apart; the
branches travel in the trace file and are checked like the rest of it."""

from __future__ import annotations

import json
import math
import re
import threading

import pytest
import torch

from engine import InvalidRequest, Settings, Trace, TraceFormatError, run_trace
from engine.schema.branches import ROOT, lineage, view
from engine.run.fork import measure_recompute, run_fork
from engine.run.prefixes import Prefixes, cache_key
from viz.html.tree import tree_html
from engine.schema.validate import validate
from tests import numerics

PROMPT = "Xiao Ming went to the supermarket and bought some apples. Then he"
NEW = 16


@pytest.fixture(scope="module")
def run(engine):
    """One greedy run whose cache the engine keeps, as the page's runs do."""
    return run_trace(engine, PROMPT, Settings(max_new_tokens=NEW, ignore_eos=True), keep_cache=True)


def second_choice(step) -> int:
    return next(c.id for c in step.candidates if c.id != step.id)


def generate_from(engine, ids: list[int], n: int) -> list[int]:
    """transformers' own greedy decoding from these exact token ids: the reference."""
    with torch.inference_mode():
        out = engine.model.generate(input_ids=torch.tensor([ids], device=engine.device), max_new_tokens=n,
                                    min_new_tokens=n, do_sample=False)
    return out[0, len(ids):].tolist()


def same_as_generate(steps, reference: list[int]) -> None:
    """A branch's greedy steps against `generate`'s tokens: the same, or parted at a near tie (two paths,
    tests/numerics.py; the gaps are the branch's own, as generate keeps none)."""
    ids, gaps = [s.id for s in steps], numerics.margins(steps)
    numerics.assert_same_greedy(ids, reference, gaps)


def fingerprint(engine, trace: Trace) -> tuple:
    cache = engine.prefixes.get(cache_key(trace))
    return cache.get_seq_length(), float(sum(layer.keys.double().sum() for layer in cache.layers))


@pytest.mark.numerics
@pytest.mark.parametrize("at", [0, 5, NEW - 1])
def test_a_greedy_branch_equals_a_fresh_run_from_the_same_tokens(engine, run, at):
    token = second_choice(run.steps[at])
    forked = run_fork(engine, run, at, token, max_new_tokens=8)
    branch = forked.branches[-1]
    assert branch.rebuilt_ms is None                       # the run's own cache was reused, not rebuilt
    assert branch.reused_tokens == len(run.prompt.tokens) + at
    assert [s.index for s in branch.steps] == list(range(at, at + 9)) and branch.steps[0].forced
    prefix = [t.id for t in run.prompt.tokens] + [s.id for s in run.steps[:at]] + [token]
    same_as_generate(branch.steps[1:], generate_from(engine, prefix, 8))
    assert branch.summary.new_tokens == 8 and branch.summary.ttft_ms > branch.copy_ms > 0
    assert branch.cache_bytes > 0


@pytest.mark.numerics
def test_branches_of_branches_and_the_parent_untouched(engine, run):
    before_json, before_cache = run.to_json(), fingerprint(engine, run)
    first = run_fork(engine, run, 3, second_choice(run.steps[3]), max_new_tokens=10)
    b1 = first.branches[-1]
    # fork the branch two tokens after its own fork point, with that step's second candidate
    at = b1.at + 2
    second = run_fork(engine, first, at, second_choice(b1.steps[2]), parent=b1.id, max_new_tokens=6)
    b2 = second.branches[-1]
    assert b2.parent == b1.id and b2.rebuilt_ms is None    # b1's own cache was kept and reused
    steps = lineage(second, b2.id)
    assert [s.id for s in steps[:at]] == [s.id for s in lineage(first, b1.id)[:at]]
    prefix = [t.id for t in run.prompt.tokens] + [s.id for s in steps[:at]] + [b2.token]
    same_as_generate(b2.steps[1:], generate_from(engine, prefix, 6))
    # the parent trace, its steps and its cache are what they were; the forks are new traces
    assert run.to_json() == before_json and run.branches == [] and len(first.branches) == 1
    assert fingerprint(engine, run) == before_cache
    shown = view(second, b2.id)
    assert [s.id for s in shown.steps] == [s.id for s in steps] and shown.summary is b2.summary


def test_two_visitors_forking_one_run_stay_apart(engine, run):
    """Two threads fork the same shared run at once with different tokens: each gets exactly
    what it gets alone, and neither sees the other's branch."""
    at = 4
    tokens = [c.id for c in run.steps[at].candidates[1:3]]
    alone = {t: [s.id for s in run_fork(engine, run, at, t, max_new_tokens=8).branches[-1].steps] for t in tokens}
    results, errors = {}, []

    def fork(token):
        try:
            results[token] = run_fork(engine, run, at, token, max_new_tokens=8)
        except Exception as exc:          # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=fork, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    for token, forked in results.items():
        assert len(forked.branches) == 1 and [s.id for s in forked.branches[0].steps] == alone[token]


@pytest.mark.numerics
def test_recomputing_the_prefix_gives_the_same_first_token_and_is_slower(engine, run):
    forked = run_fork(engine, run, NEW - 1, second_choice(run.steps[NEW - 1]), max_new_tokens=4)
    measured = measure_recompute(engine, forked, forked.branches[-1].id).branches[-1]
    # the whole prefix recomputed against the kept cache: two paths, one greedy choice
    got, want, gaps = [measured.recompute_token], [measured.steps[1].id], numerics.margins(measured.steps[1:2])
    numerics.assert_same_greedy(got, want, gaps)
    assert measured.recompute_ms > 0 and forked.branches[-1].recompute_ms is None


def test_a_trace_without_a_cache_in_memory_has_its_prefix_built_once(engine, run, monkeypatch):
    loaded = Trace.from_json(run.to_json())
    monkeypatch.setattr(engine, "prefixes", Prefixes(engine.limits.prefix_cache_bytes))   # a server restarted
    first = run_fork(engine, loaded, 2, second_choice(run.steps[2]), max_new_tokens=4).branches[-1]
    again = run_fork(engine, loaded, 6, second_choice(run.steps[6]), max_new_tokens=4).branches[-1]
    assert first.rebuilt_ms is not None and again.rebuilt_ms is None


@pytest.mark.numerics
def test_a_file_naming_another_run_forks_from_its_own_tokens(engine, run):
    """A trace file is in the visitor's hands: its prompt can be edited and its run id can name another
    run in memory. The kept caches are found by tokens, not by that id: such a file misses the other
    run's cache, its prefix is computed from its own tokens, and the branch equals `generate` there."""
    other = run_trace(engine, "The capital of France is", Settings(max_new_tokens=8, ignore_eos=True))
    forged = Trace.from_json(other.to_json())
    forged.run_id = run.run_id                           # the kept run's id on another prompt's tokens
    at, token = 3, second_choice(other.steps[3])
    branch = run_fork(engine, forged, at, token, max_new_tokens=6).branches[-1]
    assert branch.rebuilt_ms is not None                 # computed, not the kept run's cache
    prefix = [t.id for t in other.prompt.tokens] + [s.id for s in other.steps[:at]] + [token]
    same_as_generate(branch.steps[1:], generate_from(engine, prefix, 6))


def test_branches_round_trip_and_old_files_load(engine, run):
    forked = run_fork(engine, run, 1, second_choice(run.steps[1]), max_new_tokens=5)
    forked = measure_recompute(engine, forked, "b1")
    back = validate(Trace.from_json(forked.to_json()))
    assert back.to_json() == forked.to_json() and back.branches[0].recompute_ms == forked.branches[0].recompute_ms
    old = json.loads(run.to_json())
    old["schema"] = "token-by-token/trace@2"
    del old["branches"], old["run_id"]
    assert validate(Trace.from_json(json.dumps(old))).branches == []


def hostile(forked: Trace, change) -> str:
    doc = json.loads(forked.to_json())
    change(doc["branches"][0])
    return json.dumps(doc)


@pytest.mark.parametrize("name, change", [
    ("unknown parent", lambda b: b.update(parent="b9")),
    ("fork point past the run", lambda b: b.update(at=10_000)),
    ("step numbering", lambda b: b["steps"][1].update(index=0)),
    ("chosen token not first", lambda b: b.update(token=b["steps"][1]["id"] + 1)),
    ("token outside the vocabulary", lambda b: b.update(token=10**9)),
    ("summary count", lambda b: b["summary"].update(new_tokens=999)),
    ("duplicate id", lambda b: b.update(id="")),
    ("negative time", lambda b: b.update(copy_ms=-1.0)),
])
def test_hostile_branch_data_is_refused(engine, run, name, change):
    forked = run_fork(engine, run, 2, second_choice(run.steps[2]), max_new_tokens=3)
    with pytest.raises(TraceFormatError):
        validate(Trace.from_json(hostile(forked, change)))


def test_bad_fork_requests_are_refused_before_any_work(engine, run):
    with pytest.raises(InvalidRequest, match="outside"):
        run_fork(engine, run, NEW + 5, run.steps[0].id)
    stored = {c.id for c in run.steps[0].candidates}
    with pytest.raises(InvalidRequest, match="candidates"):
        run_fork(engine, run, 0, next(i for i in range(engine.info.vocab_size) if i not in stored))
    with pytest.raises(InvalidRequest, match="no branch"):
        run_fork(engine, run, 0, run.steps[0].id, parent="b42")
    other = Trace.from_json(run.to_json())
    other.model.id = "someone/else"
    with pytest.raises(InvalidRequest, match="recorded with"):
        run_fork(engine, other, 0, run.steps[0].id)
    assert lineage(run, ROOT) == run.steps


def test_the_tree_puts_each_branch_under_the_step_it_replaced(engine, run):
    first = run_fork(engine, run, 3, second_choice(run.steps[3]), max_new_tokens=4)
    second = run_fork(engine, first, 5, second_choice(first.branches[0].steps[2]), parent="b1", max_new_tokens=2)
    page = tree_html(second, "b2", "en")
    nodes = re.findall(r'class="tbt-step tbt-tree-node( tbt-tree-fork)?" data-index="(\d)"[^>]*grid-row:(\d);'
                       r'grid-column:(\d+)', page)
    rows = {}
    for fork, index, row, column in nodes:
        rows.setdefault(int(index), []).append((int(column), bool(fork)))
    assert [c for c, _ in rows[0]] == list(range(2, NEW + 2))          # the run: every step from 0
    assert rows[1][0] == (3 + 2, True) and len(rows[1]) == 5            # b1 starts under step 3, outlined
    assert rows[2][0] == (5 + 2, True) and len(rows[2]) == 3            # b2 under step 5
    assert 'tbt-tree-label tbt-tree-shown" data-index="2"' in page      # the branch on show
    assert "from the run at step 3" in page and "from b1 at step 5" in page
    logp = sum(math.log(s.chosen_p_model) for s in lineage(second, "b2"))
    assert f"log p {logp:.2f}" in page
