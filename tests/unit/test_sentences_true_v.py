"""Issue 51, "every sentence true V": each sentence the teacher found untrue against the page's own
recordings (assets/traces, lab, profile, floor), said again with the figure that proves it, computed
from those recordings; one test per item, each failing on the old text."""

import copy
import json
import re

from ui.page.i18n import I18N
from viz.fmt import fmt_ms
from viz.text import strings
from viz.text.labels import label
from tests.paths import ROOT

LANGS = ("en", "zh")
PAGE, CHARTS, ERRORS = strings.page(), strings.charts(), strings.errors()
LAB = json.loads((ROOT / "assets" / "lab" / "recorded.json").read_text(encoding="utf-8"))
PROFILE = {lang: json.loads((ROOT / "assets" / "profile" / f"{lang}-next.json").read_text(encoding="utf-8"))
           for lang in LANGS}


def shown(key: str, lang: str) -> str:
    """A page text as the page shows it, its facts filled."""
    return I18N.translations[lang][key]


def test_1_step_0_is_the_prefills_token_not_a_decode_step():
    """One numbering: the run's steps are 0 … n−1, step 0's token comes from the prefill, decode step k
    (k ≥ 1) is step k (as err_profile_step and the profile say). No label calls step 0 a decode step."""
    for lang in LANGS:
        assert PAGE["decode_step"]["zh"] != "解码步" and PAGE["decode_step"]["en"] != "Decode step"
        assert "prefill" in PAGE["decode_step"]["en"] and "预填充" in PAGE["decode_step"]["zh"]
        assert "0" in PAGE["decode_step"][lang] and "0" in PAGE["share_step_range"][lang]
        assert "decode step {asked}" not in PAGE["share_step_range"]["en"]
        assert "解码步编号" not in PAGE["share_step_range"]["zh"]
    assert "decode step" not in CHARTS["deck_step"]["en"] and "解码步" not in CHARTS["deck_step"]["zh"]
    assert "one and {most}" in ERRORS["err_profile_step"]["en"]         # decode steps: 1 …
    # the deck's first KV figure is the prefill's cache: the prompt's positions, said so
    from ui.host.recordings import recorded
    for lang in LANGS:
        trace = recorded(lang)["next"]
        first = trace.steps[0]
        assert first.kv_tokens == len(trace.prompt.tokens)
        said = label("deck_kv_first", lang, n=first.kv_tokens)
        assert str(len(trace.prompt.tokens)) in said and ("prefill" in said or "预填充" in said)


def _matmuls(profile: dict) -> tuple[float, float]:
    ops = [o for o in profile["phases"]["decode"]["ops"] if o["family"] == "matmul"]
    return sum(o["bytes"] for o in ops), sum(o["measured_ms"] for o in ops)


def test_2_the_tpot_bound_is_said_as_an_estimate_the_profile_beats():
    """The bandwidth bound is bytes ÷ a summing test's bandwidth; the profile's decode matmuls read
    faster than that test (recorded: 539 MB in 21.0 ms, 25.7 GB/s against 20.5 GB/s): no "floor",
    no "cannot beat", and the beating bandwidth is said, computed from the profile."""
    machine = next(h for h in LAB["roofline"]["hardware"] if h["measured"])
    for lang in LANGS:                                   # each language's page quotes its own recording
        read, ms = _matmuls(PROFILE[lang])
        bw = read / ms / 1e6
        assert bw > machine["bandwidth_bytes_s"] / 1e9                   # as recorded
        more = shown("wt_4_more", lang)
        assert f"{bw:.3g} GB/s" in more and fmt_ms(ms) in more and f"{read / 1e6:.0f} MB" in more
        assert label("fact_matmul_beat", lang) in more
    assert "floor under TPOT" not in PAGE["wt_4_text"]["en"] and "takes at least" not in PAGE["wt_4_more"]["en"]
    assert "cannot beat" not in CHARTS["lab_roof_explain"]["en"] and "不可能" not in CHARTS["lab_roof_explain"]["zh"]
    assert "estimate" in CHARTS["lab_roof_explain"]["en"] and "估算" in CHARTS["lab_roof_explain"]["zh"]
    # a profile whose matmuls read slower than the test: the clause says so
    from viz.text.facts import profile_facts
    slow = copy.deepcopy(PROFILE["en"])
    for o in slow["phases"]["decode"]["ops"]:
        o["measured_ms"] *= 2
    for lang in LANGS:
        assert profile_facts(slow, LAB, lang)["matmul_beat"] == label("fact_matmul_no_beat", lang)


def test_10_the_roofline_is_defined_where_first_used_and_the_ridge_point_waits_for_step_10():
    """Steps before the profile (step 10) that name the roofline say what it is where they name it;
    the ridge point is left to step 10, which defines it."""
    for i in range(9):
        for part in ("text", "legend", "more"):
            entry = PAGE.get(f"wt_{i}_{part}")
            if not entry:
                continue
            assert "ridge" not in entry["en"] and "拐点" not in entry["zh"], (i, part)
            if "roofline" in entry["en"].lower():
                assert "whichever" in entry["en"] or "the longer of" in entry["en"], (i, part)
                assert "较长" in entry["zh"], (i, part)


def test_11_the_bound_states_every_byte_it_divides_and_the_gpu_ratio_for_what_it_is():
    """538 MB of weights + 6.27 MB of KV at 20.5 GB/s = 26.6 ms (decimal bytes beside GB/s, the KV
    stated); the V100 → H100 ratio is their bandwidths' by construction, not a finding."""
    row = next(r for r in LAB["roofline"]["rows"] if r["this_model"] and r["hardware_measured"])
    machine = next(h for h in LAB["roofline"]["hardware"] if h["measured"])
    total = (row["weight_bytes_read"] + row["kv_bytes"]) / machine["bandwidth_bytes_s"] * 1e3
    assert fmt_ms(total) == fmt_ms(row["tpot_bound_ms"])                # the row's bound is these bytes
    for lang in LANGS:
        more = shown("wt_4_more", lang)
        assert f"{row['weight_bytes_read'] / 1e6:.0f} MB" in more and f"{row['kv_bytes'] / 1e6:.3g} MB" in more
        assert fmt_ms(row["tpot_bound_ms"]) in more
    assert "mostly because it reads memory faster" not in PAGE["wt_4_more"]["en"]
    assert "by construction" in PAGE["wt_4_more"]["en"] and "按定义" in PAGE["wt_4_more"]["zh"]
    assert "{bw_x}" not in PAGE["wt_4_more"]["en"]


def test_12_the_chinese_speed_step_says_estimates_as_the_english_does():
    zh = PAGE["wt_4_text"]["zh"]
    assert "只要" not in zh and "至少" not in zh
    assert zh.count("约") >= 3 and "估算" in zh                         # here, old GPU, new GPU


def test_3_a_short_prefill_slower_than_the_decode_step_is_not_said_to_follow_its_memory_bound():
    """The 13-token prefill's matmuls took 39.4 ms against 16.6 ms for the same weights in the decode
    step: its bound is reading the weights, but its time did not follow it, and the sentence says so
    with both figures; a prefill near the decode step's time is said to follow it."""
    from viz.text import lab_verdicts
    profile = copy.deepcopy(PROFILE["en"])
    layer = lambda phase: [o for o in profile["phases"][phase]["ops"] if o["family"] == "matmul" and o["layers"]]
    pre, dec = sum(o["measured_ms"] for o in layer("prefill")), sum(o["measured_ms"] for o in layer("decode"))
    assert pre > 2 * dec                                                   # as recorded
    held = {lang: lab_verdicts.profile_prefill(profile, lang) for lang in LANGS}
    for lang in LANGS:
        assert fmt_ms(pre) in held[lang] and fmt_ms(dec) in held[lang], held[lang]
    assert "is not what their time followed" in held["en"] and "并不是读权重" in held["zh"]
    for o in layer("prefill"):
        o["measured_ms"] = o["measured_ms"] * dec / pre                  # the decode step's time
    other = {lang: lab_verdicts.profile_prefill(profile, lang) for lang in LANGS}
    assert "is not what their time followed" not in other["en"] and "并不是读权重" not in other["zh"]
    assert "limited by reading the weights, as in the decode step" not in CHARTS["verdict_prof_prefill_memory"]["en"]
    assert "limited by reading the weights" not in PAGE["profile_heading"]["en"]


def test_4_the_recorded_profile_says_its_run_and_its_replay_were_timed_on_different_days():
    """The walkthrough's run (5 · Speed: 89.5 ms prefill) was recorded on one day and replayed with
    timers (10 · Profile: 59.5 ms) on another: the note names both dates, and the gaps now show the
    run's own times (taken from the recorded trace of the same run), said as apart in time."""
    from ui.chapters.profile import note_md
    from ui.host import recordings
    for lang in LANGS:
        profile = recordings.profile(lang)
        trace = recordings.recorded(lang)["next"]
        assert profile["run_id"] == trace.run_id
        assert profile["run_ms"]["prefill"] == trace.prefill.ms
        note = note_md(profile, lang, True)
        run_day, day = profile["created"][:10], profile["measured"][:10]
        assert run_day != day and run_day in note and day in note
        assert fmt_ms(trace.prefill.ms) in note and fmt_ms(profile["phases"]["prefill"]["forward_ms"]) in note
        assert label("prof_gap_run_apart", lang, run=fmt_ms(trace.prefill.ms),
                     plain=fmt_ms(profile["phases"]["prefill"]["forward_ms"]),
                     x=f"{trace.prefill.ms / profile['phases']['prefill']['forward_ms']:.1f}×",
                     run_day=run_day, day=day, warm="—") in note


def test_5_measured_here_is_said_only_of_what_is():
    """The page opens on recordings (another machine, another day) and projections: "every number is
    measured here" was not true of them."""
    assert "Every number on this page is measured here" not in PAGE["model_plain"]["en"]
    assert "页面上的每个数字都是运行时在这里实测的" not in PAGE["model_plain"]["zh"]
    assert "projection" in PAGE["model_plain"]["en"] and "推算" in PAGE["model_plain"]["zh"]
    assert "measured on the machine this app runs on" not in CHARTS["lab_intro"]["en"]
    assert "在运行本应用的这台机器上" not in CHARTS["lab_intro"]["zh"]
    assert "measured here" not in PAGE["wt_6_text"]["en"] and "在这台机器上实测" not in PAGE["wt_6_text"]["zh"]
    assert "on this machine, measured" not in PAGE["wt_8_more"]["en"] and "在这台机器上实测" not in PAGE["wt_8_more"]["zh"]
    assert "measured on this machine" not in PAGE["wt_5_intro"]["en"]
    # the recordings do name their machine and date, which the new sentences point to
    assert "{date}" in CHARTS["lab_recorded_note"]["en"] and "{device}" in CHARTS["lab_recorded_note"]["en"]


def test_6_the_kv_rise_is_compared_with_what_reading_the_cache_costs():
    """34.1 → 35.3 ms over 41 … 87 positions: 46 positions × 46,080 B = 2.1 MB, 0.10 ms at 20.5 GB/s,
    about 8 % of the rise; the verdict says that share, computed, not "because every step reads the cache"."""
    from viz.text import lab_verdicts
    part, roof = LAB["kv_cache"], LAB["roofline"]
    line = lab_verdicts.kv_line(part["runs"]["cache_on"], part["prompt_tokens"])
    assert line["trend"] == "grows"
    row = next(r for r in roof["rows"] if r["this_model"] and r["hardware_measured"])
    per = row["kv_bytes"] / row["decode_context_tokens"]
    bw = next(h for h in roof["hardware"] if h["measured"])["bandwidth_bytes_s"]
    read_ms = (line["b"] - line["a"]) * per / bw * 1e3
    share = read_ms / (line["end"] - line["start"])
    assert 0.03 < share < 0.2                                              # as recorded: about 8 %
    from viz.charts.lab import kv_summary
    for lang in LANGS:
        said = kv_summary(LAB, lang)
        assert f"{share:.0%}" in said and fmt_ms(read_ms) in said, said
    assert "because every step reads all the cached keys and values" not in CHARTS["verdict_kv_on_grows"]["en"]
    for key in ("verdict_kv_tie_flat", "verdict_kv_tie_grows", "verdict_kv_tie_falls"):
        assert "these runs reach" not in CHARTS[key]["en"] and "这些运行的长度" not in CHARTS[key]["zh"]


def test_7_the_prefills_token_is_the_first_generated_token_not_the_first_answer_token():
    """The glossary keeps "first answer token" (首个回答 token) for the first token after thinking."""
    assert "first answer token" not in PAGE["wt_1_text"]["en"] and "首个回答 token" not in PAGE["wt_1_text"]["zh"]
    assert "first generated token" in PAGE["wt_1_text"]["en"] and "第一个生成的 token" in PAGE["wt_1_text"]["zh"]


def test_8_flashattention_is_the_same_attention_mathematically_its_rounding_differs():
    """Measured: the fused kernels' logits differ from eager's (up to 3.5e-5 in the lab's quick fixture)."""
    diffs = [r["max_abs_logit_diff_vs_eager"] for r in LAB["attention"]["rows"] if r["implementation"] != "eager"]
    assert max(diffs) > 0
    for text in (PAGE["wt_5_text"], CHARTS["lab_attn_explain"]):
        assert "exactly the same" not in text["en"] and "完全相同" not in text["zh"]
        assert "rounding" in text["en"] and "舍入" in text["zh"]


def test_9_the_long_context_rows_name_llama_3_1():
    """Llama 3 has an 8K context; the 32K and 128K rows are Llama 3.1's (the same configuration)."""
    from engine.schema.specs import CONTEXTS, PUBLIC_MODELS
    assert max(CONTEXTS) > 8192
    assert all(not m.name.startswith("Llama-3-") for m in PUBLIC_MODELS)
    for lang in LANGS:
        text = shown("wt_2_text", lang)
        assert "Llama-3.1-70B" in text and "Llama-3-70B" not in text


def test_13_the_scaffold_note_says_what_the_model_was_not_trained_for():
    """SmolLM2's fine-tuning has worked maths; it was not trained to think before it answers."""
    en = PAGE["wt_scaffold_note"]["en"]
    assert "never trained to reason" not in en and "think before it answers" in en


def test_14_the_forward_tick_says_what_else_the_step_does():
    """At step 0 the rest of the bar is mostly cutting the prompt into tokens, not sampling."""
    from ui.host.recordings import recorded
    steps = recorded("en")["next"].steps
    rest = [s.ms - s.forward_ms for s in steps]
    assert rest[0] > 2 * sorted(rest[1:])[len(rest) // 2]                # step 0 does more than sample
    assert "the rest is sampling" not in CHARTS["forward_tick"]["en"] and "其余是采样" not in CHARTS["forward_tick"]["zh"]
    assert "step 0" in CHARTS["forward_tick"]["en"] and "第 0 步" in CHARTS["forward_tick"]["zh"]


def test_15_which_bound_a_gpu_step_meets_is_said_by_the_models_size():
    """For this model an H100's bound is 0.08 ms, less than launching its several hundred operations;
    for Llama-3-8B it is 4.49 ms: the serving floor's remark says which regime holds for which size."""
    for lang in LANGS:
        more = shown("wt_8_more", lang)
        row = next(r for r in LAB["roofline"]["rows"] if r["this_model"] and "H100" in r["hardware"])
        assert fmt_ms(row["tpot_bound_ms"]) in more
        ops = [o for o in PROFILE[lang]["phases"]["decode"]["ops"] if o["family"] not in ("other", "watching", "sampling")]
        assert str(sum(o["layers"] or 1 for o in ops)) in more
    assert "because a step is bound by reading the weights" not in PAGE["wt_8_more"]["en"]
    assert "launches" in PAGE["wt_8_more"]["en"] and "启动开销" in PAGE["wt_8_more"]["zh"]


def test_16_the_same_decode_step_timed_by_several_sections_is_said_together_with_why():
    """One lab run times the fp32 decode step in sections 1, 3, 4, 5 and 6 (34.5 … 40.7 ms): the
    roofline's summary lists them and says why they differ."""
    from viz.charts.lab_roofline import roofline_summary
    times = [LAB["kv_cache"]["runs"]["cache_on"]["tpot_ms"],
             next(r for r in LAB["weights"]["rows"] if r["format"] == "fp32")["tpot_ms"],
             next(r for r in LAB["batching"]["rows"] if r["batch"] == 1)["tpot_ms"],
             next(r for r in LAB["verify"]["rows"] if r["k"] == 1)["ms_per_token"]]
    for lang in LANGS:
        said = roofline_summary(LAB, lang)
        assert all(fmt_ms(ms) in said for ms in times), said
        assert fmt_ms(min(times)) in said and label("lab_same_step", lang).split("{")[0] in said


def test_17_the_serving_floor_doc_says_its_paragraph_once():
    doc = (ROOT / "docs" / "serving-floor.md").read_text(encoding="utf-8")
    assert doc.count("The chapter opens on a recorded workload") == 1
    assert not re.search(r"so the lanes are the\n\n", doc)


def test_18_a_ratio_of_medians_is_said_as_one():
    """The compiled step's check keeps eager's median step time over the compiled step's median
    (engine/compiled/check.py): the page and the host's doc call it that, not a speed-up."""
    en = CHARTS["decode_eager_not_paying"]["en"]
    assert "ratio of the two medians" in en and "中位数之比" in CHARTS["decode_eager_not_paying"]["zh"]
    hosting = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    line = next(x for x in hosting.splitlines() if "TBT_COMPILE_PAYS" in x and x.startswith("|"))
    assert "speed-up" not in line and "median step times" in line


def test_zh_one_word_per_idea_is_in_the_glossary():
    """Each idea the issue found said several ways in Chinese has its one word and the words it
    replaced in the glossary (tests/unit/test_i18n.py holds every zh string to it)."""
    glossary = {(g["en"], g["zh"]): set(g.get("avoid", {}).get("zh", [])) for g in strings.glossary()}
    for (en, zh), avoid in {("eager", "普通注意力"): {"eager", "逐步计算"},
                            ("eager", "未编译"): {"即时执行", "逐个执行", "普通（eager）"},
                            ("capture attention", "记录注意力"): {"注意力捕获"},
                            ("logit lens", "逐层预测"): {"logit lens"},
                            ("kernel", "算子"): {"内核"}, ("step", "步"): {"步骤"}}.items():
        assert avoid <= glossary[(en, zh)], (en, zh)
    assert ("throughput", "吞吐量") in glossary and ("thinking", "思考") in glossary
    zh = {k: v["zh"] for k, v in strings.every_text().items()}
    assert not [k for k, v in zh.items() if re.search("吞吐(?!量)", v)]
    assert "Logit lens" not in CHARTS["lens_title"]["zh"] and "思维链" not in CHARTS["thinking_block"]["zh"]
