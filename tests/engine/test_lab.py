"""The acceleration lab (engine/lab): real measurements at quick sizes, and the quality metric checked
against itself (fp32 vs fp32) and against a deliberately damaged copy of the model; the lab holding
the engine while it times, and its kernel arms running the kernels they name."""

import copy
import json
import math
import threading
import time
from types import SimpleNamespace

import pytest
import torch

from engine.errors import InvalidRequest
from engine.run.generate import run_trace
from engine.lab import run_lab
from engine.lab import kernels, kv_cache, roofline, speculative, weights
from engine.lab.measure import peak_bytes, spread
from engine.schema.trace import Settings
from viz.text.labels import label
from tests.waits import inside, wait_until


@pytest.fixture(scope="module")
def quick(engine):
    """One quick run of all seven experiments, shared by the checks below (~1.5 minutes here). During
    the KV cache experiment's first timed run a visitor's run starts (what
    test_the_lab_holds_the_engine_while_it_times reads): every model pass is stamped until that
    experiment has ended."""
    from ui.chapters.run import waiting_md
    seen, passes, visitor = [], [], {}        # passes: (thread, "start" | "end", time) of every model pass
    hooks = [engine.model.register_forward_pre_hook(
                 lambda *_: passes.append((threading.get_ident(), "start", time.perf_counter()))),
             engine.model.register_forward_hook(
                 lambda *_: passes.append((threading.get_ident(), "end", time.perf_counter())))]

    def visit():
        visitor["trace"] = run_trace(engine, "Hello!", Settings(max_new_tokens=2))

    def progress(fraction, text):
        seen.append((fraction, text))
        if text.startswith("kv cache: ") and "run 1" in text and "thread" not in visitor:   # the engine held
            visitor["held_for"] = engine.held_for
            visitor["status"] = {lang: waiting_md(engine, lang) for lang in ("en", "zh")}
            visitor["thread"] = threading.Thread(target=visit)
            visitor["thread"].start()
            # the visitor's run is at its first pass, waiting for the engine the lab holds
            # (an error raised here fails the test below even if the lab swallowed it)
            visitor["at_forward"] = wait_until(lambda: inside(visitor["thread"], "engine/model/core.py", "forward"),
                                               60, "the visitor's run at its first forward pass")
        elif hooks and "thread" in visitor and not text.startswith("kv cache: "):   # the next experiment
            visitor["kv_ended"] = time.perf_counter()
            for hook in hooks:
                hook.remove()
            hooks.clear()

    before = engine.model.config._attn_implementation
    try:
        result = run_lab(engine, quick=True, progress=progress)
        visitor["thread"].join(timeout=120)
    finally:
        for hook in hooks:
            hook.remove()
    result["_progress"], result["_passes"], result["_visitor"] = seen, passes, visitor
    result["_kernel_before_after"] = (before, engine.model.config._attn_implementation)
    return result


def quality_texts(engine):
    return [engine.encode(t, templated=True) for t in weights.QUALITY_TEXTS[:2]]


def test_fp32_against_itself_agrees_fully(engine):
    texts = quality_texts(engine)
    first = [weights.all_logits(engine.model, ids, engine.lock) for ids in texts]
    second = [weights.all_logits(engine.model, ids, engine.lock) for ids in texts]   # real second passes
    q = weights.next_token_quality(first, second)
    assert q["top1_agreement"] == 1.0 and q["mean_kl"] == 0.0
    assert q["positions"] == sum(len(t) for t in texts)


def test_perturbed_model_agrees_less(engine):
    texts = quality_texts(engine)
    reference = [weights.all_logits(engine.model, ids, engine.lock) for ids in texts]
    with engine.lock:
        damaged = copy.deepcopy(engine.model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for layer in damaged.model.layers[:10]:             # noise on the MLP output of ten layers
            w = layer.mlp.down_proj.weight
            w.add_(torch.randn(w.shape, generator=generator) * w.std() * 1.5)
    q = weights.next_token_quality(reference, [weights.all_logits(damaged, ids) for ids in texts])
    del damaged
    assert q["top1_agreement"] < 0.9 and q["mean_kl"] > 0.05, q


def test_quality_metric_on_known_distributions():
    p = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    q = torch.tensor([[0.0, 2.0, -1.0], [0.0, 1.0, 0.0]])
    out = weights.next_token_quality([p], [q])
    assert out["top1_agreement"] == 0.5
    # by hand: row 1 swaps the first two logits, so log p - log q = (2, -2, 0) and KL = 2 (p0 - p1)
    # with p = (e², 1, e⁻¹) / (e² + 1 + e⁻¹); row 2 is equal (KL 0); the mean over both rows is p0 - p1
    e = math.e
    assert out["mean_kl"] == pytest.approx((e**2 - 1) / (e**2 + 1 + 1 / e))      # 0.7296


def test_peak_memory_sees_a_large_temporary():
    big = 64 * 2**20
    peak, method, _ = peak_bytes(lambda: torch.ones(big // 4).sum(), "cpu")
    assert big <= peak < big * 1.5, (peak, method)


def test_spread_reports_median_and_range():
    assert spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "runs": [3.0, 1.0, 2.0]}


def test_unknown_experiment_is_rejected(engine):
    with pytest.raises(InvalidRequest):
        run_lab(engine, only=["warp_drive"])


def test_roofline_bound_math():
    hw = {"bandwidth_bytes_s": 1e9, "peak_flops": 1e12, "memory_bytes": 1e10}
    model = {"parameters": 1e9, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 8, "bytes_per_value": 2}
    b = roofline.bounds(model, hw, prompt_tokens=100, new_tokens=10)
    flops = 2 * 1e9 * 100 + 4 * 2 * 100 ** 2 * 4 * 8
    assert b["prefill_flops"] == flops
    assert b["ttft_bound_ms"] == pytest.approx(max(flops / 1e12, 2e9 / 1e9) * 1000)
    kv = 2 * 2 * 2 * 8 * 2 * (100 + 5)
    assert b["kv_bytes"] == kv and b["tpot_bound_ms"] == pytest.approx((2e9 + kv) / 1e9 * 1000)
    # untied embeddings: the input table is a lookup and the output head runs for the last token only
    untied = roofline.bounds({**model, "vocab": 1000, "hidden_size": 100, "tied": False}, hw, 100, 10)
    assert untied["prefill_flops"] == flops - 2 * 2 * 1000 * 100 * 100 + 2 * 1000 * 100
    assert untied["weight_bytes_read"] == 2e9 - 1000 * 100 * 2 and untied["weight_bytes"] == 2e9


# --- one quick run of everything --------------------------------------------------------------
def test_lab_json_has_what_the_bars_ask_for(quick):
    result = {k: v for k, v in quick.items() if not k.startswith("_")}
    json.dumps(result, allow_nan=False)
    assert set(result["experiments"]) == {"kv_cache", "attention", "weights", "roofline", "batching", "verify",
                                         "speculative"}
    assert result["partial"] is False
    assert result["kv_cache_speedup"] == result["kv_cache"]["speedup"]
    assert all(result[name]["exclusive"] is True for name in result["experiments"])
    fractions = [f for f, _ in quick["_progress"]]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1


@pytest.mark.numerics
def test_kv_cache_is_faster_with_identical_tokens(quick):
    kv = quick["kv_cache"]
    assert kv["identical_tokens"] is True
    # 8 tokens after a 40-token prompt: each cache-off step is a whole prefill (~2.9x here when idle;
    # how much faster is a timing, which a busy host moves: the bench's and the page's, not a test's).
    # What makes it faster is below: the cache-on steps read the kept keys, the cache-off steps keep none
    assert kv["speedup"] > 0 and len(kv["speedup_spread"]["runs"]) == kv["repeats"]
    assert kv["speedup"] == pytest.approx(
        kv["runs"]["cache_off"]["e2e_ms"] / kv["runs"]["cache_on"]["e2e_ms"], rel=1e-6)
    for run in kv["runs"].values():
        assert len(run["step_ms"]) == kv["new_tokens"] and run["runs_measured"] == kv["repeats"] == 3
        assert run["spread"]["e2e_ms"]["min"] <= run["e2e_ms"] <= run["spread"]["e2e_ms"]["max"]
        assert run["same_tokens_every_run"] and run["text"]
    p = kv["prompt_tokens"]
    assert kv["runs"]["cache_on"]["kv_tokens"] == list(range(p, p + kv["new_tokens"]))
    assert kv["runs"]["cache_off"]["kv_tokens"] == [0] * kv["new_tokens"]


@pytest.mark.numerics
def test_attention_kernels_at_three_lengths(quick):
    att = quick["attention"]
    assert att["implementations"][:2] == ["eager", "sdpa"]
    assert any(u["implementation"] == "flash_attention_2" for u in att["unavailable"]) or \
        "flash_attention_2" in att["implementations"]
    for impl in att["implementations"]:
        rows = [r for r in att["rows"] if r["implementation"] == impl]
        assert len(rows) >= 3
        for r in rows:
            assert r["ms"] > 0 and r["peak_bytes"] > 0 and len(r["spread"]["ms"]["runs"]) == att["repeats"]
            assert r["matches_eager"] and r["same_top1_as_eager"]
            assert r["implementation_set"] == impl         # the model really ran the kernel named
            assert r["attention_matrix_bytes"] == 9 * r["tokens"] ** 2 * 4     # SmolLM2: 9 heads, fp32
    before, after = quick["_kernel_before_after"]
    assert after == before                                 # the engine's own kernel is back


def test_kernel_arms_run_real_eager_and_sdpa_and_restore_a_custom_kernel(engine):
    """The engine may run a custom attention function by default; the lab's arms must not: they
    set "eager" and "sdpa" by name, and put the custom one back afterwards."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import sdpa_mask
    calls = []

    def counting(module, query, key, value, attention_mask, **kwargs):
        calls.append(1)
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register("lab_test_counting", counting)
    AttentionMaskInterface.register("lab_test_counting", sdpa_mask)
    before = engine.model.config._attn_implementation
    with engine.lock:
        engine.model.set_attn_implementation("lab_test_counting")
    try:
        kernels.prefill(engine.model, kernels.prompt_ids(engine, 8))
        assert len(calls) == 30                            # the counter sees a pass: one call per layer
        calls.clear()
        result = kernels.run(engine, lengths=(16, 32), repeats=1)
        assert engine.model.config._attn_implementation == "lab_test_counting"
    finally:
        with engine.lock:
            engine.model.set_attn_implementation(before)
    assert calls == [], "a timed arm ran the engine's own kernel, not the one it names"
    assert [(r["implementation"], r["implementation_set"]) for r in result["rows"]] == \
        [("eager", "eager"), ("sdpa", "sdpa")] * 2


def test_weight_formats(quick):
    part = quick["weights"]
    rows = {r["format"]: r for r in part["rows"]}
    assert list(rows) == ["fp32", "bf16", "int8", "nf4"]
    assert part["bitsandbytes"], "bitsandbytes is pinned in requirements.txt: int8 and nf4 must run"
    unavailable = {f: r["reason"] for f, r in rows.items() if not r["available"]}
    assert not unavailable, unavailable
    fp32, bf16, int8, nf4 = (rows[f] for f in ("fp32", "bf16", "int8", "nf4"))
    assert fp32["top1_agreement"] == 1.0 and fp32["mean_kl"] == 0.0 and fp32["shared_model"]
    for r in rows.values():
        assert r["tpot_ms"] > 0 and r["ttft_ms"] > 0 and len(r["spread"]["tpot_ms"]["runs"]) == part["repeats"]
        assert len(r["tokens"]) == part["new_tokens"]
    # smaller weights: half for bf16, then int8, then 4-bit (embeddings and norms stay wider)
    assert bf16["weight_bytes"] == pytest.approx(fp32["weight_bytes"] / 2, rel=0.01)
    assert nf4["weight_bytes"] < int8["weight_bytes"] < bf16["weight_bytes"]
    # ...and a model that drifts further from fp32 the fewer bits it keeps
    # (here: bf16 ~0.99 top-1 agreement, int8 ~0.95, nf4 ~0.6 over all positions of the texts)
    assert bf16["top1_agreement"] >= 0.9 and int8["top1_agreement"] >= 0.8
    assert nf4["top1_agreement"] < bf16["top1_agreement"]
    assert 0 < bf16["mean_kl"] < nf4["mean_kl"] and 0 < int8["mean_kl"] < nf4["mean_kl"]
    assert part["gguf"]["bytes"] > 0


def test_roofline_rows(quick, engine):
    roof = quick["roofline"]
    here = [r for r in roof["rows"] if not r["projection"]]
    assert len(here) == 1 and here[0]["this_model"] and here[0]["hardware_measured"]
    row, machine = here[0], roof["hardware"][0]
    # the bounds come from this machine's best measured bandwidth and FLOP/s and the model's real bytes
    assert machine["measured"] and row["weight_bytes"] == engine.info.parameter_bytes
    assert row["tpot_bound_ms"] == pytest.approx(
        (row["weight_bytes_read"] + row["kv_bytes"]) / machine["bandwidth_bytes_s"] * 1000)
    assert row["measured_tpot_ms"] == row["spread"]["tpot_ms"]["median"]
    assert row["tpot_ratio"] == pytest.approx(row["measured_tpot_ms"] / row["tpot_bound_ms"])
    assert row["ttft_ratio"] == pytest.approx(row["measured_ttft_ms"] / row["ttft_bound_ms"])
    # (whether the measured pass stays above its bound is a timing against a bandwidth measured at another
    # moment of a shared machine: the bench's, not a test's)
    gpus = {h["name"] for h in roof["hardware"] if not h["measured"]}
    assert gpus == {"V100 SXM2", "A100 SXM 80GB", "H100 SXM", "H200 SXM"}
    assert all(r["projection"] for r in roof["rows"] if r is not here[0])
    assert {r["model"] for r in roof["rows"]} >= {"Llama-3.1-8B", "Llama-3.1-70B"}


def test_stop_returns_partial_results(engine):
    cancel = threading.Event()

    def progress(fraction, text):
        if "run 1" in text:
            cancel.set()                                     # press Stop during the first timed run

    result = kernels.run(engine, quick=True, progress=progress, cancel=cancel, lengths=(16, 32, 48))
    assert result["partial"] is True and result["rows"] == []
    result = kv_cache.run(engine, new_tokens=2, repeats=1, cancel=cancel)
    assert result["partial"] is True and result["speedup"] is None


def test_host_caps_the_lab_sizes(engine, monkeypatch):
    """TBT_LAB_MAX_TOKENS / TBT_LAB_SECONDS (Limits.lab_*) bound what a visitor's lab run measures."""
    import dataclasses
    monkeypatch.setattr(engine, "limits", dataclasses.replace(engine.limits, lab_max_prompt_tokens=64,
                                                              lab_seconds=20))
    result = kernels.run(engine, quick=True, repeats=1)
    assert result["lengths"] == [32, 64] and max(result["measured_lengths"]) <= 64


def test_the_lab_holds_the_engine_while_it_times(quick, engine):
    """A visitor's run started during an experiment (the quick run's KV cache, above) takes no forward
    pass until the experiment's last one has finished; while it waits, the Explore tab's status says
    why, in both languages."""
    from ui.chapters.run import waiting_md
    visitor, passes = quick["_visitor"], quick["_passes"]
    assert visitor["at_forward"] and visitor["trace"].summary.new_tokens == 2
    assert quick["kv_cache"]["exclusive"] is True and engine.held_for is None
    assert visitor["held_for"] == kv_cache.HELD_FOR
    # the page names the experiment in its own language
    assert "KV cache on vs off" in visitor["status"]["en"] and "Waiting" in visitor["status"]["en"]
    assert "KV 缓存" in visitor["status"]["zh"] and "加速实验室" in visitor["status"]["zh"]
    assert waiting_md(engine, "en") is None                # nothing holds it now
    lab_thread, visitor_thread = threading.get_ident(), visitor["thread"].ident
    kv_ends = [t for who, kind, t in passes if who == lab_thread and kind == "end" and t < visitor["kv_ended"]]
    visitor_starts = [t for who, kind, t in passes if who == visitor_thread and kind == "start"]
    assert kv_ends, "the KV cache experiment's passes were stamped"
    # the visitor's first pass came after the experiment's last one (or after the stamps ended: the
    # experiment was over then)
    assert min(visitor_starts, default=visitor["kv_ended"]) > max(kv_ends), \
        "a visitor's pass ran while the lab was timing"


# --- the host's controls ----------------------------------------------------------------------------
def test_lab_mode_follows_the_host(engine, monkeypatch):
    from ui.host.lab_mode import lab_mode
    monkeypatch.delenv("TBT_LAB", raising=False)
    assert lab_mode(engine.info.id) == "on"                          # the embedded model
    assert lab_mode("org/hub-model") == "recorded"                   # a host's model: no live runs
    for mode in ("on", "recorded", "off"):
        monkeypatch.setenv("TBT_LAB", mode)
        assert lab_mode("org/hub-model") == mode


def test_the_page_offers_the_models_the_roofline_projects(engine):
    """The page lists them before the model loads; the experiment names them from the engine."""
    from engine.lab.roofline import model_configs
    from ui.chapters.lab import roofline_choices
    assert roofline_choices(engine.info.id) == [m["name"] for m in model_configs(engine)]


def test_a_crafted_call_gets_no_run_when_the_lab_is_not_live(engine, monkeypatch):
    import gradio as gr
    from tests.engine.test_models import OneEngine
    from ui.chapters.lab import LabActions
    monkeypatch.setenv("TBT_LAB", "recorded")
    run = LabActions(OneEngine(engine)).runner("kv_cache")
    with pytest.raises(gr.Error, match="does not run live"):
        next(run({}, "en", None, "", request=None))


def test_the_lab_mode_is_the_visitors_model_s(engine, monkeypatch):
    """A visitor who chose a hub model gets no live lab run, though the page's default is embedded."""
    import copy
    import dataclasses
    import gradio as gr
    from tests.engine.test_models import OneEngine
    from ui.chapters.lab import LabActions
    monkeypatch.delenv("TBT_LAB", raising=False)
    hub = copy.copy(engine)
    hub.info = dataclasses.replace(engine.info, id="org/hub-model", source="hub")
    models = OneEngine(engine, others={"org/hub-model": hub})
    run = LabActions(models).runner("kv_cache")
    with pytest.raises(gr.Error, match="does not run live"):
        next(run({}, "en", None, "org/hub-model", request=None))
    assert models.asked == ["org/hub-model"]


def test_weights_refuse_models_above_the_hosts_size_before_loading_anything(engine, monkeypatch):
    import copy
    from engine import InvalidRequest
    from engine.environment import Limits
    small_cap = copy.copy(engine)
    small_cap.limits = Limits(lab_max_parameters=100_000_000)         # below SmolLM2's 135M
    loads = []
    from engine.lab import formats
    monkeypatch.setattr(formats, "load", lambda *a, **k: loads.append(a))
    with pytest.raises(InvalidRequest, match="100M|0.1B|TBT_LAB_MAX_PARAMS"):
        weights.run(small_cap, quick=True)
    assert loads == []


def test_batching_rows_and_their_bounds(quick, engine):
    """Each batch size: a measured step (median within its spread), total tokens/s = B / step, and
    the roofline bound from this machine's measured bandwidth and FLOP/s at that batch."""
    part = quick["batching"]
    rows = part["rows"]
    assert [r["batch"] for r in rows] == [1, 2, 4] and part["partial"] is False
    machine = part["machine"]
    assert machine["measured"] and machine["bandwidth_bytes_s"] > 0 and machine["peak_flops"] > 0
    # one measurement per host (engine/lab/host.py): the roofline divided by the same figures, and the
    # result gives them back for the next process
    roof = next(h for h in quick["roofline"]["hardware"] if h["measured"])
    for key in ("bandwidth_bytes_s", "peak_flops", "measured_at"):
        assert machine[key] == roof[key] == quick["host"][key], key
    for r in rows:
        s = r["step_ms"]
        assert s["min"] <= s["median"] <= s["max"] and len(s["runs"]) == part["repeats"]
        assert r["tokens_per_s"] == pytest.approx(r["batch"] / s["median"] * 1000)
        assert r["flops"] == 2 * engine.info.parameters * r["batch"]
        assert r["bound_ms"] == max(r["bandwidth_bound_ms"], r["compute_bound_ms"])
        assert r["intensity"] == pytest.approx(r["flops"] / r["bytes"])
    assert rows[0]["speedup"] == 1.0
    # the arithmetic grows with B, the weight reads do not: intensity rises with the batch
    assert rows[0]["intensity"] < rows[1]["intensity"] < rows[2]["intensity"]


def test_verify_rows(quick):
    part = quick["verify"]
    assert [r["k"] for r in part["rows"]] == [1, 4] and part["rows"][0]["vs_one"] == 1.0
    for r in part["rows"]:
        assert r["ms_per_token"] == pytest.approx(r["ms"]["median"] / r["k"])


def test_serving_charts_and_tables_in_both_languages(quick):
    from viz.charts import lab_serving
    result = {k: v for k, v in quick.items() if not k.startswith("_")}
    for lang in ("en", "zh"):
        for chart in (lab_serving.batching_chart, lab_serving.verify_chart, lab_serving.speculative_chart):
            json.dumps(chart(result, lang=lang).to_dict())
        assert list(lab_serving.batching_table(result, lang=lang)["batch size" if lang == "en" else "批大小"]) == [1, 2, 4]
        assert len(lab_serving.verify_table(result, lang=lang)) == 2
        assert lab_serving.batching_summary(result, lang) and lab_serving.verify_summary(result, lang)
        spec = lab_serving.speculative_table(result, lang=lang)
        assert len(spec) == 3 and set(spec[label("lab_spec_identical", lang)]) == {label("lab_spec_yes", lang)}
        reading = lab_serving.speculative_summary(result, lang)
        assert label("lab_spec_same", lang) in reading and label("lab_spec_no_draft", lang) in reading
    with pytest.raises(ValueError):
        lab_serving.batching_chart({})


def check_passes(part: dict, arm: str) -> None:
    """What the watch saw of one arm is a faithful account of its output: each pass emitted its
    accepted drafts and then one token of the model's own, and the passes add up to the answer."""
    row = next(r for r in part["rows"] if r["arm"] == arm)
    strip = part["strips"][arm]
    assert len(strip) == row["passes"] < row["new_tokens"]
    for p in strip:
        assert p["emitted"][:p["accepted"]] == p["drafted"][:p["accepted"]]
        assert len(p["emitted"]) == p["accepted"] + p["own"] and p["own"] in (0, 1)
        assert p["accepted"] + p["rejected"] + p["unused"] == len(p["drafted"])
        if p["rejected"]:           # the first rejected draft is not what the model chose
            assert p["own"] == 1 and p["emitted"][p["accepted"]] != p["drafted"][p["accepted"]]
    assert all(p["own"] == 1 for p in strip[:-1])      # only the last pass can be cut short
    assert sum(len(p["emitted"]) for p in strip) == row["new_tokens"]
    assert row["accepted"] == sum(p["accepted"] for p in strip)
    assert row["rejected"] + row["unused"] == row["drafted"] - row["accepted"]


@pytest.mark.numerics
def test_prompt_lookup_is_identical_to_plain_greedy_in_fewer_passes(quick):
    part = quick["speculative"]
    assert [r["arm"] for r in part["rows"]] == ["plain", "lookup_3", "lookup_10"]
    assert part["identical"] is True and all(r["identical"] for r in part["rows"])
    plain = part["rows"][0]
    assert plain["passes"] == plain["new_tokens"] == part["max_new_tokens"] and plain["speedup"] == 1.0
    for arm in ("lookup_3", "lookup_10"):
        check_passes(part, arm)
    # the prompt holds the passage the answer quotes: lookup drafts, and most of it is kept
    assert next(r for r in part["rows"] if r["arm"] == "lookup_10")["acceptance"] > 0.3
    assert part["draft_model"] is None and part["draft_given"] is False and part["draft_skipped"]


@pytest.mark.numerics
@pytest.mark.slow
def test_a_draft_model_drafts_through_assisted_generation(engine):
    """The model as its own draft: every drafted token is the model's own choice, so all are
    accepted and the output is plain greedy's (the mechanism, not a speed-up)."""
    schedule = engine.model.generation_config.num_assistant_tokens_schedule
    part = speculative.run(engine, quick=True, draft=engine)
    draft = next(r for r in part["rows"] if r["arm"] == "draft")
    assert part["draft_model"] == engine.info.id and draft["identical"]
    assert draft["drafted"] > 0 and draft["acceptance"] == 1.0
    check_passes(part, "draft")
    assert engine.model.generation_config.num_assistant_tokens_schedule == schedule   # put back
    assert "_get_candidate_generator" not in vars(engine.model)      # the watch is gone


def test_a_draft_with_another_vocabulary_is_refused_by_name(engine):
    other = SimpleNamespace(tokenizer=SimpleNamespace(get_vocab=lambda: {"a": 0}), info=SimpleNamespace(id="x/other"))
    assert "x/other" in speculative.draft_problem(engine, other)
    assert speculative.draft_problem(engine, engine) is None
    assert "no draft model" in speculative.draft_problem(engine, None)


def test_the_opt_in_int8_weight_only_format(engine):
    """bf16 activations with int8 weights through aten._weight_int8pack_mm: measured like the others,
    a quarter of fp32's bytes in the decoder's matmuls, close to fp32 but not equal; never by default."""
    assert "bf16-int8" not in weights.FORMATS
    part = weights.run(engine, quick=True, formats=("fp32", "bf16-int8"), new_tokens=4, repeats=1)
    fp32, int8 = part["rows"]
    assert int8["format"] == "bf16-int8" and int8["available"], int8
    assert int8["dtype"] == "bfloat16" and int8["tpot_ms"] > 0 and len(int8["tokens"]) == 4
    # int8 decoder weights (+ bf16 scales) beside bf16 embeddings: about 0.3 of fp32's bytes
    assert 0.2 < int8["weight_bytes"] / fp32["weight_bytes"] < 0.4
    assert int8["top1_agreement"] >= 0.8 and int8["mean_kl"] > 0
    with pytest.raises(InvalidRequest, match="unknown weight format"):
        weights.run(engine, quick=True, formats=("fp32", "int3"))
