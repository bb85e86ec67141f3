"""Every comparative sentence flips with its figure (viz/text/verdicts.py): each verdict is fed a
recording where its claim holds and the same recording with the numbers changed so that it does
not, and the words change, in English and in Chinese, while the numbers said are the figure's."""

import copy
import json

import pytest

from engine.bench.evaluation import QUESTIONS, last_answer, matches, read_answer, wilson
from viz.charts import lab, lab_serving, lab_weights
from viz.text import lab_verdicts, serving_verdicts, verdicts
from viz.fmt import fmt_bytes, fmt_ms
from viz.text.labels import LABELS, label
from tests.paths import ROOT

LAB = json.loads((ROOT / "assets" / "lab" / "recorded.json").read_text(encoding="utf-8"))
EVAL = json.loads((ROOT / "assets" / "eval" / "smollm2-cpu.json").read_text(encoding="utf-8"))
LANGS = ("en", "zh")


def lab_copy() -> dict:
    return copy.deepcopy(LAB)


def said(fn, *args) -> dict[str, str]:
    """The sentence in both languages."""
    return {lang: fn(*args, lang) for lang in LANGS}


def flips(held: dict[str, str], other: dict[str, str], words: dict[str, tuple[str, str]]) -> None:
    """`words[lang]` = (in the claim, in its opposite): each appears in its own sentence only."""
    for lang in LANGS:
        claim, opposite = words[lang]
        assert claim in held[lang] and claim not in other[lang], (lang, held[lang], other[lang])
        assert opposite in other[lang] and opposite not in held[lang], (lang, held[lang], other[lang])


# --- 1, 2 KV cache: does each line grow with the context? --------------------------------------
def test_the_cache_on_line_is_called_level_or_rising_from_its_steps():
    part = copy.deepcopy(LAB["kv_cache"])                       # recorded 2026-12-02: 34.1 -> 35.3 ms, ±0.90 ms
    assert lab_verdicts.kv_line(part["runs"]["cache_on"], part["prompt_tokens"])["trend"] == "grows"
    on = part["runs"]["cache_on"]                               # the same steps, level within noise
    on["step_ms"] = [on["step_ms"][0]] + [35.0 + (0.5 if i % 2 else -0.5) for i in range(len(on["step_ms"]) - 1)]
    level = said(lab_verdicts.kv_lines, part)
    line = lab_verdicts.kv_line(on, part["prompt_tokens"])
    assert line["trend"] == "flat"
    rising = copy.deepcopy(part)
    on = rising["runs"]["cache_on"]
    on["step_ms"] = [ms + 2.0 * i for i, ms in enumerate(on["step_ms"])]     # +2 ms a step: a long context
    grown = lab_verdicts.kv_line(on, part["prompt_tokens"])
    assert grown["trend"] == "grows"
    rose = said(lab_verdicts.kv_lines, rising)
    flips(level, rose, {"en": ("stayed level from", "still grew with the context"),
                        "zh": ("耗时基本持平", "耗时仍随上下文增长")})
    for lang in LANGS:                                           # the fitted ends and the margin are said
        assert fmt_ms(line["start"]) in level[lang] and fmt_ms(line["margin"]) in level[lang]
        assert fmt_ms(grown["start"]) in rose[lang] and fmt_ms(grown["end"]) in rose[lang]
        assert f"{part['prompt_tokens'] + 1}" in level[lang]


def test_the_cache_off_line_is_called_rising_or_level_from_its_steps():
    part = LAB["kv_cache"]
    rising = said(lab_verdicts.kv_lines, part)                      # recorded: 125 ms -> 221 ms
    level = copy.deepcopy(part)
    off = level["runs"]["cache_off"]
    off["step_ms"] = [130.0 + (3.0 if i % 2 else -3.0) for i in range(len(off["step_ms"]))]
    flat = said(lab_verdicts.kv_lines, level)
    flips(rising, flat, {"en": ("Without the cache the fitted line rose", "Without the cache the fitted line stayed level"),
                         "zh": ("关闭缓存时，同样这些步的拟合直线从", "关闭缓存时，拟合直线同样基本持平")})
    line = lab_verdicts.kv_line(part["runs"]["cache_off"], part["prompt_tokens"])
    assert fmt_ms(line["end"]) in rising["en"] and fmt_ms(line["end"]) in rising["zh"]


# --- 3 KV cache: faster end to end? -------------------------------------------------------------
@pytest.mark.parametrize("speedup, spread, en, zh", [
    (0.8, (0.75, 0.85), "slower end to end", "反而慢了"),
    (1.02, (0.9, 1.1), "about the same end to end", "耗时相当"),
])
def test_the_kv_title_and_summary_say_faster_only_when_every_repeat_was(speedup, spread, en, zh):
    held = {lang: lab.kv_chart(LAB, lang).to_dict()["title"]["text"] for lang in LANGS}
    runs = LAB["kv_cache"]["speedup_spread"]["runs"]
    x, n = f"{sorted(runs)[len(runs) // 2]:.2f}×", len(runs)            # the median repeat's speed-up
    assert held == {"en": f"KV cache: {x} faster end to end (median of {n} repeats)",
                    "zh": f"KV 缓存：端到端提速 {x}（{n} 次重复的中位数）"}
    changed = lab_copy()
    changed["kv_cache"].update(speedup=speedup, speedup_spread={"median": speedup, "min": spread[0], "max": spread[1]})
    other = {lang: lab.kv_chart(changed, lang).to_dict()["title"]["text"] for lang in LANGS}
    flips(held, other, {"en": ("faster end to end", en), "zh": ("提速", zh)})
    summary = said(lab.kv_summary, changed)
    assert f"{spread[0]:.2f}×" in summary["en"] and f"{spread[1]:.2f}×" in summary["zh"]
    if speedup < 1:
        assert f"{1 / speedup:.2f}×" in other["en"]                 # the run with the cache took 1.25x the time
    assert "faster" in lab.kv_summary(LAB, "en") and "faster" not in summary["en"]


def test_the_kv_speed_up_is_the_median_repeat_and_says_so():
    """Each repeat times both modes, so each has its own speed-up; the title says their median (and
    that it is one), the summary also names the ratio of the two median times, which no repeat need have."""
    part = lab_copy()["kv_cache"]
    part.update(speedup=3.6, speedup_spread={"median": 2.9, "min": 2.5, "max": 3.6, "runs": [2.9, 3.6, 2.5]})
    title, summary = said(lab_verdicts.kv_title, part), said(lab_verdicts.kv_speedup, part)
    for lang in LANGS:
        assert "2.90×" in title[lang] and "3.60×" not in title[lang], title[lang]
        assert "2.90×" in summary[lang] and "3.60×" in summary[lang] and "2.50×" in summary[lang], summary[lang]
    assert "median of 3 repeats" in title["en"] and "3 次重复的中位数" in title["zh"]
    assert "Dividing the two median run times instead gives 3.60×" in summary["en"]
    alike = copy.deepcopy(part)                                          # the two ratios read the same
    alike["speedup_spread"]["runs"] = [3.6, 3.5, 3.7]
    flips(summary, said(lab_verdicts.kv_speedup, alike), {"en": ("Dividing the two median run times", "3.60× faster"),
                                                       "zh": ("中位数相除", "提速 3.60×")})
    part["speedup_spread"]["runs"] = [0.8, 0.9, 0.85]                    # every repeat slower: the title flips
    flips(title, said(lab_verdicts.kv_title, part), {"en": ("faster", "slower"), "zh": ("提速", "反而慢了")})


# --- 4, 5, 6 attention kernels: faster, smaller, same result? ------------------------------------
def longest(result: dict, impl: str) -> dict:
    rows = result["attention"]["rows"]
    n = max(r["tokens"] for r in rows)
    return next(r for r in rows if r["tokens"] == n and r["implementation"] == impl)


def test_a_fused_kernel_is_called_faster_only_beyond_both_spreads():
    held = said(lab.attention_summary, LAB)                         # 2.00 s against 4.19 s
    slower, same = lab_copy(), lab_copy()
    sdpa = longest(slower, "sdpa")
    sdpa.update(ms=6000.0, spread={"ms": {"median": 6000.0, "min": 5900.0, "max": 6100.0}})
    eager = longest(same, "eager")
    longest(same, "sdpa").update(ms=eager["ms"] * 0.98, spread={"ms": {"median": eager["ms"] * 0.98,
                                                                     "min": eager["ms"] * 0.9, "max": eager["ms"] * 1.1}})
    flips(held, said(lab.attention_summary, slower), {"en": ("faster than eager's", "slower than eager's"),
                                                       "zh": ("比普通注意力快", "比普通注意力慢")})
    flips(held, said(lab.attention_summary, same), {"en": ("faster than eager's", "about the same time"),
                                                     "zh": ("比普通注意力快", "耗时相当")})
    assert "6.00 s" in said(lab.attention_summary, slower)["zh"]


def test_a_fused_kernel_is_called_smaller_only_when_its_peak_is():
    held = said(lab.attention_summary, LAB)                         # 27.5 MiB against 91.5 MiB
    bigger = lab_copy()
    longest(bigger, "sdpa")["peak_bytes"] = 2 * longest(bigger, "eager")["peak_bytes"]
    other = said(lab.attention_summary, bigger)
    flips(held, other, {"en": ("of eager's", "more than eager's"), "zh": ("是普通注意力（", "还多")})
    assert "200%" in other["en"] and "30%" in held["en"]


def test_same_result_only_within_the_experiments_tolerance():
    held = said(lab.attention_summary, LAB)
    differ = lab_copy()
    longest(differ, "sdpa")["max_abs_logit_diff_vs_eager"] = 0.02
    other = said(lab.attention_summary, differ)
    flips(held, other, {"en": ("Same result within rounding", "The results differ"), "zh": ("结果在舍入误差内相同", "结果不同")})
    assert "2.0e-02" in other["en"] and "0.001" in other["zh"]          # the figure's difference and tolerance
    differ["attention"]["tolerance"] = 0.05                            # a looser tolerance: the same again
    assert "Same result" in lab.attention_summary(differ, "en") and "0.05" in lab.attention_summary(differ, "en")


# --- 7 weight formats: smaller and faster, or smaller but slower? --------------------------------
def weights_row(result: dict, fmt: str) -> dict:
    return next(r for r in result["weights"]["rows"] if r["format"] == fmt)


def test_each_weight_format_is_faster_or_slower_as_measured():
    held = said(lab_weights.weights_summary, LAB)              # recorded: int8 67.6 ms, nf4 30.3 ms, bf16 46.5 against 40.7 ms
    for lang in LANGS:
        assert "67.6 ms" in held[lang] and "30.3 ms" in held[lang] and "40.7 ms" in held[lang]
    assert "int8 (LLM.int8): 41% of fp32's weight memory, but slower per token" in held["en"]
    assert "int8 (LLM.int8)：权重内存为 fp32 的 41%，但每 token 更慢" in held["zh"]
    fast = lab_copy()
    for fmt in ("bf16", "int8", "nf4"):
        row = weights_row(fast, fmt)
        row["tpot_ms"] = 20.0
        row["spread"]["tpot_ms"] = {"median": 20.0, "min": 19.0, "max": 21.0}
    other = said(lab_weights.weights_summary, fast)
    flips(held, other, {"en": ("41% of fp32's weight memory, but slower per token", "41% of fp32's weight memory, and faster"),
                        "zh": ("41%，但每 token 更慢", "41%，每 token 也更快")})
    assert "no fast one for" in held["en"] and "no fast one" not in other["en"]     # the kernel note goes too
    same = lab_copy()
    bf16, fp32 = weights_row(same, "bf16"), weights_row(same, "fp32")
    bf16.update(tpot_ms=fp32["tpot_ms"] * 1.01, spread={**bf16["spread"], "tpot_ms": fp32["spread"]["tpot_ms"]})
    flips(held, said(lab_weights.weights_summary, same), {"en": ("but slower per token (46.5 ms", "about as fast per token"),
                                                   "zh": ("但每 token 更慢（46.5 ms", "速度与 fp32 相当")})


# --- 8 batching: compute, or something below the ridge? ------------------------------------------
def test_batching_blames_compute_only_from_the_ridge():
    ridged = lab_copy()                                     # recorded: no ridge up to 32; here the ridge at 16
    for r in ridged["batching"]["rows"]:
        r["compute_bound_ms"] = r["bandwidth_bound_ms"] * r["batch"] / 16
    held = said(lab_serving.batching_summary, ridged)       # recorded: x1.67 at batch 4 (60.6 ms against 36.2 ms)
    assert "at batch 4 (60.6 ms against 36.2 ms), below the roofline's ridge at batch 16" in held["en"]
    assert "limited by memory bandwidth" in lab_serving.batching_summary(LAB, "en")        # as recorded
    late = copy.deepcopy(ridged)
    rows = late["batching"]["rows"]
    one = rows[0]["step_ms"]["median"]
    for r in rows:                                          # level up to the ridge, then growing
        if 1 < r["batch"] < 16:
            r["step_ms"]["median"] = one * 1.1
    compute = said(lab_serving.batching_summary, late)
    flips(held, compute, {"en": ("not the arithmetic limit", "caps what batching buys"),
                          "zh": ("限制它的不是计算量", "这限制了批处理的收益")})
    assert "from batch 16" in compute["en"] and "从批大小 16 起" in compute["zh"]
    marks = {name: json.dumps(lab_serving.batching_chart(result).to_dict(), ensure_ascii=False)
             for name, result in (("recorded", LAB), ("late", late))}      # the chart's mark moves with it
    assert label("lab_batch_grows", b=4) in marks["recorded"] and label("lab_batch_grows", b=4) not in marks["late"]
    assert label("lab_batch_grows", b=16) in marks["late"]
    free = copy.deepcopy(ridged)
    for r in free["batching"]["rows"]:
        r["step_ms"]["median"] = one * 1.2
    flips(held, said(lab_serving.batching_summary, free), {"en": ("not the arithmetic limit", "cost little extra time"),
                                                            "zh": ("限制它的不是计算量", "每步几乎不多花时间")})


# --- 9 verifying k tokens: flat, and cheaper than k passes? --------------------------------------
def test_verifying_k_tokens_is_called_flat_or_cheaper_only_as_measured():
    held = said(lab_serving.verify_summary, LAB)           # recorded: 1.10x at k = 2; 84.2 ms for 16 vs 631 ms
    flat = lab_copy()
    one = flat["verify"]["rows"][0]["ms"]
    for r in flat["verify"]["rows"][1:3]:                   # k = 2 and 4 within one token's spread
        r["ms"].update(median=one["median"], min=one["min"], max=one["max"])
    other = said(lab_serving.verify_summary, flat)
    flips(held, other, {"en": ("does not stay flat", "Up to k = 4"), "zh": ("曲线并不平坦", "直到 k = 4")})
    dear = lab_copy()
    dear["verify"]["rows"][-1]["ms"].update(median=1500.0, min=1400.0, max=1600.0)
    flips(held, said(lab_serving.verify_summary, dear), {"en": ("still cheaper than 16", "cost more than 16"),
                                                          "zh": ("省时", "还慢")})
    assert "631 ms" in held["en"] and "84.2 ms" in held["zh"]


# --- 10 speculative decoding: faster than plain greedy? ------------------------------------------
def test_speculative_decoding_is_called_faster_only_beyond_both_spreads():
    held = said(lab_serving.speculative_summary, LAB)      # recorded: lookup_10 at 2.38x
    slow = lab_copy()
    for r in slow["speculative"]["rows"]:
        if r["arm"] != "plain":
            r["ms"] = {"median": 6000.0, "min": 5900.0, "max": 6100.0}
            r["tokens_per_s"] = r["new_tokens"] / 6.0
    other = said(lab_serving.speculative_summary, slow)
    flips(held, other, {"en": ("2.38× as fast as plain greedy", "ran slower than plain greedy"),
                        "zh": ("生成速度是普通贪心解码的 2.38×", "也比普通贪心解码慢")})
    assert "54.5 against 22.8 tokens/s" in held["en"] and f"{59 / 6.0:.1f} 对 22.8" in other["zh"]


# --- 11, 12 speed chapter: TTFT against length, prefill against decode ---------------------------
def test_ttft_is_said_to_grow_with_the_prompt_only_when_it_did():
    grows = [{"prompt_tokens": 16, "ttft_ms": 40.0, "prefill_ms": 35.0}, {"prompt_tokens": 512, "ttft_ms": 400.0, "prefill_ms": 390.0}]
    level = [{"prompt_tokens": 16, "ttft_ms": 40.0, "prefill_ms": 35.0}, {"prompt_tokens": 512, "ttft_ms": 41.0, "prefill_ms": 36.0}]
    held, other = said(verdicts.ttft_by_length, grows), said(verdicts.ttft_by_length, level)
    held, other = {k: " ".join(v) for k, v in held.items()}, {k: " ".join(v) for k, v in other.items()}
    flips(held, other, {"en": ("TTFT grew from 40.0 ms", "TTFT stayed within 10%"), "zh": ("增长到", "变化不超过 10%")})
    assert "400 ms at 512" in held["en"] and "41.0 ms" in other["zh"]


def test_prefill_is_said_faster_than_decoding_only_when_it_was():
    held, other = said(verdicts.prefill_rate, 800.0, 50.0), said(verdicts.prefill_rate, 15.0, 50.0)  # decode: 20 tok/s
    flips(held, other, {"en": ("40.0× this run's decode rate", "here slower than"), "zh": ("的 40.0×", "还慢")})
    assert "20" in held["en"] and "0.75×" in other["zh"]
    assert verdicts.prefill_rate(None, 50.0, "en") == label("verdict_prefill_rate_plain", "en")


# --- 13 reasoning: is one thinking budget better? ------------------------------------------------
def test_a_budget_is_called_better_only_when_the_intervals_part():
    held = said(verdicts.eval_budgets, EVAL)               # recorded: 2, 4, 3 of 20: the intervals overlap
    assert "Budget 32: 4 of 20 right (95 % confidence interval 8%–42%); budget 0: 2 of 20 (3%–30%)" in held["en"]
    apart = copy.deepcopy(EVAL)
    row = apart["budgets"][1]
    row.update(correct=17, accuracy=0.85, ci95=list(wilson(17, 20)))
    other = said(verdicts.eval_budgets, apart)
    flips(held, other, {"en": ("could be chance", "did better beyond chance"), "zh": ("可能只是偶然", "确实答得更好")})
    assert "17 of 20" in other["en"] and "20 题答对 17 题" in other["zh"]
    equal = copy.deepcopy(EVAL)
    for r in equal["budgets"]:
        r.update(correct=3, accuracy=0.15, ci95=list(wilson(3, 20)))
    flips(held, said(verdicts.eval_budgets, equal), {"en": ("overlap", "same share right"), "zh": ("重叠", "比例都相同")})


# --- 14 reasoning: the whole answer judged -------------------------------------------------------
def judged(question, reply: str) -> dict[str, str]:
    first, last = read_answer(question, reply), last_answer(question, reply)
    return said(lambda lang: verdicts.answer(first, matches(question, first), last, matches(question, last), lang))


def test_an_answer_that_goes_on_to_another_number_is_not_just_called_right():
    apples = next(q for q in QUESTIONS if q.id == "apples")
    recorded = " 12\n\nTom has 5 apples and buys 7 more apples, so he has 12 - 7 = 2 apples now."
    consistent = " 12\n\nTom has 5 apples and buys 7 more apples, so he has 5 + 7 = 12 apples now."
    assert (read_answer(apples, recorded), last_answer(apples, recorded)) == ("12", "2")
    held, other = judged(apples, consistent), judged(apples, recorded)
    assert held == {"en": "answered 12, which is right", "zh": "回答 12，正确"}
    for lang, (claim, opposite) in {"en": ("answered 12, which is right", "ended on 2, which is **wrong**: it contradicts"),
                                    "zh": ("回答 12，正确", "却得出 2，**错误**：前后矛盾")}.items():
        assert held[lang] == claim and other[lang].startswith(claim + ("，" if lang == "zh" else ","))
        assert opposite in other[lang] and opposite not in held[lang]
    assert last_answer(apples, "小明有12个<E8>") == "12"          # a byte piece is not a number


def test_every_verdict_key_has_an_opposite_in_both_languages():
    """Each comparison has its other wordings in the catalogue (a claim without its opposite would
    be said whatever the figure)."""
    families = ["verdict_kv_title_", "verdict_kv_on_", "verdict_kv_off_", "verdict_attn_time_", "verdict_attn_memory_",
                "verdict_w_smaller_", "verdict_verify_k_", "verdict_spec_", "verdict_ttft_", "verdict_eval_",
                "verdict_batch_cause_", "verdict_prefill_here_", "verdict_prefill_gpus_", "verdict_prof_prefill_",
                "verdict_kv_tie_", "floor_why_", "lab_baseline_", "verdict_prof_matmul_"]
    for family in families:
        assert len([k for k in LABELS if k.startswith(family)]) >= 2, family


# --- 15 fork: reusing the prefix against recomputing it ------------------------------------------
def test_the_fork_says_reuse_was_faster_only_when_it_was():
    held, other = said(verdicts.fork_reuse, 300.0, 100.0), said(verdicts.fork_reuse, 80.0, 100.0)
    flips(held, other, {"en": ("Reusing the cache was faster here", "recomputing was even faster"),
                        "zh": ("这里沿用缓存更快", "重算反而比沿用缓存更快")})
    assert "3.00×" in held["en"] and "0.80×" in other["zh"]
    same = said(verdicts.fork_reuse, 105.0, 100.0)
    flips(held, same, {"en": ("This is why", "about as long"), "zh": ("这就是", "耗时相当")})


# --- 16 reasoning: how much later the first answer token came -----------------------------------
def test_the_first_answer_is_said_later_only_when_it_came_later():
    held, other = said(verdicts.first_answer, 155.0, 3130.0), said(verdicts.first_answer, 155.0, 160.0)
    flips(held, other, {"en": ("20.2× the normal run's 155 ms", "about the same time"),
                        "zh": ("是普通模式（155 ms）的 20.2×", "差不多早")})
    assert "3.13 s" in held["zh"] and "160 ms" in other["en"]
    assert "sooner" in verdicts.first_answer(155.0, 100.0, "en")


# --- 17 batching below the ridge: memory traffic, or outside the roofline? ----------------------
def test_an_early_batching_jump_is_blamed_on_memory_only_when_the_bytes_grew_with_it():
    """Below the ridge the step can grow for two reasons the figures tell apart: its bytes (and so its
    roofline bound) grew with it, or they did not and the growth lies outside what the roofline counts."""
    part = lab_copy()["batching"]
    rows = sorted(part["rows"], key=lambda r: r["batch"])
    one, two = rows[0], rows[1]
    base = one["step_ms"]["median"]
    for r in rows[1:]:                                   # the step jumps 1.6x at batch 2, stays below the ridge
        r["step_ms"]["median"] = base * 1.6
        r["bytes"], r["bound_ms"] = one["bytes"] * 1.004, one["bound_ms"] * 1.004       # bytes barely move
        r["compute_bound_ms"] = 0.1 * r["bound_ms"]
    other = said(serving_verdicts.batching, part)
    memory = copy.deepcopy(part)
    for r in sorted(memory["rows"], key=lambda r: r["batch"])[1:]:
        r["bytes"], r["bound_ms"] = one["bytes"] * 1.5, one["bound_ms"] * 1.5          # each request's KV reads
    grew = said(serving_verdicts.batching, memory)
    flips(other, grew, {"en": ("neither the memory traffic nor the arithmetic", "the growth is memory traffic"),
                        "zh": ("都解释不了这次跳升", "增长来自内存读写")})
    assert "0.4%" in other["en"] and "0.4%" in other["zh"] and "50%" in grew["en"] and "50%" in grew["zh"]
    assert f"batch {two['batch']}" in other["en"]


# --- 18 the roofline: a prefill is compute-bound only past the ridge ----------------------------
def test_a_prefill_is_called_compute_bound_only_where_its_rows_say_so():
    part = lab_copy()["roofline"]
    own = [r for r in part["rows"] if r["this_model"]]
    for r in own:                                        # here past the ridge, every GPU short of it
        r["ttft_bound_by"] = "compute" if r["hardware_measured"] else "memory"
    held = said(lab_verdicts.roofline_prefill, part)
    for r in own:                                        # the other way round
        r["ttft_bound_by"] = "memory" if r["hardware_measured"] else "compute"
    other = said(lab_verdicts.roofline_prefill, part)
    flips(held, other, {"en": ("past this machine's ridge point", "short of this machine's ridge point"),
                        "zh": ("长过这台机器的拐点", "短于这台机器的拐点")})
    flips(held, other, {"en": ("same prefill is limited by reading the weights", "same prefill is limited by arithmetic"),
                        "zh": ("同样的预填充受读取权重的带宽限制", "同样的预填充受算力限制")})
    machine = next(h for h in part["hardware"] if h["measured"])
    ridge = machine["peak_flops"] / machine["bandwidth_bytes_s"] * 4 / 2          # fp32: 4 bytes a weight
    assert f"about {ridge:.0f} tokens" in held["en"] and f"约 {ridge:.0f} 个 token" in held["zh"]
    h100 = next(h for h in part["hardware"] if "H100" in h["name"])
    assert abs(lab_verdicts.ridge_tokens(h100) - 989 / 3.35) < 1                      # bf16: peak ÷ bandwidth
    assert f"{own[0]['prompt_tokens']} tokens" in held["en"]


def test_a_profiled_prefill_says_which_bound_its_matmuls_met():
    profile = json.loads((ROOT / "assets" / "profile" / "en-next.json").read_text(encoding="utf-8"))
    ops = [o for o in profile["phases"]["prefill"]["ops"] if o["family"] == "matmul" and o["layers"]]
    for o in ops:
        o["bound"] = "compute"
    held = said(lab_verdicts.profile_prefill, profile)
    for o in ops:
        o["bound"] = "memory"
    other = said(lab_verdicts.profile_prefill, profile)
    flips(held, other, {"en": ("limited by arithmetic", "bound is reading the weights"),
                        "zh": ("受算力限制", "下限由读取权重决定")})
    n = profile["phases"]["prefill"]["tokens"]
    assert f"{n} tokens" in held["en"] and f"{n} 个 token" in other["zh"]


def test_a_profiled_decode_step_under_its_bound_is_said_to_be_under_it():
    """A lower bound a measurement beats is no floor: the decode step's matmuls are said to come
    within ×r of their bound only at or above it; below it the sentence says the bandwidth they were
    divided by was measured below what the machine reached (recorded: ×0.8 at 20.5 GB/s)."""
    from viz.charts import profile as profile_viz
    profile = json.loads((ROOT / "assets" / "profile" / "en-next.json").read_text(encoding="utf-8"))
    held = said(lambda lang: profile_viz.summary_md(profile, lang))
    matmuls = [o for o in profile["phases"]["decode"]["ops"] if o["family"] == "matmul" and o["layers"]]
    assert sum(o["measured_ms"] for o in matmuls) < sum(o["predicted_ms"] for o in matmuls)      # as recorded
    for o in matmuls:                                    # the same step, 1.5x its bound
        o["measured_ms"] = 1.5 * o["predicted_ms"]
    other = said(lambda lang: profile_viz.summary_md(profile, lang))
    flips(held, other, {"en": ("less time than a bound allows", "came within ×1.5 of their bound"),
                        "zh": ("比下限还快", "离下限只差 ×1.5")})
    bw = f"{profile['machine']['bandwidth_bytes_s'] / 1e9:.3g} GB/s"
    assert bw in held["en"] and bw in held["zh"] and "×0.8" in held["en"]
    assert all("×1.5 its bound" not in v for v in held.values())


# --- 19 the texts' quoted figures: shares, the baseline, the V100 -> H100 floors, the KV tie -----
def test_the_quantization_shares_are_the_measured_rows():
    from viz.text.facts import weights_facts
    rows = {r["format"]: r["weight_bytes"] for r in LAB["weights"]["rows"] if r.get("available")}
    for lang in LANGS:
        f = weights_facts(LAB, lang)
        assert f["int8_share"] == f"{rows['int8'] / rows['fp32']:.0%}" and f["nf4_share"] == f"{rows['nf4'] / rows['fp32']:.0%}"
        assert f["int8_vs_bf16"] == f"{rows['int8'] / rows['bf16']:.0%}"
    plain = lab_copy()
    del plain["weights"]["gguf"]                          # a model that did not come from a GGUF file
    held = said(lambda lang: weights_facts(LAB, lang)["baseline"])
    other = said(lambda lang: weights_facts(plain, lang)["baseline"])
    flips(held, other, {"en": ("dequantized at load", "fp32 is the baseline here"), "zh": ("反量化", "这里以 fp32 为基准")})


def test_the_speed_step_quotes_the_recordings_own_v100_and_h100_floors():
    from viz.text.facts import speed_facts
    f = speed_facts(LAB)
    rows = {r["hardware"]: r for r in LAB["roofline"]["rows"] if r["model"] == f["speed_model"]}
    old, new = rows[f["old_gpu"]], rows[f["new_gpu"]]
    assert "V100" in f["old_gpu"] and "H100" in f["new_gpu"]
    assert f["old_floor"] == fmt_ms(old["tpot_bound_ms"]) and f["new_floor"] == fmt_ms(new["tpot_bound_ms"])
    assert f["gpu_x"] == f"{old['tpot_bound_ms'] / new['tpot_bound_ms']:.2f}×"


def test_the_kv_step_ties_its_growth_to_the_lab_verdict():
    """Step 3 says a step's time grows with the context, and what the lab's KV chart (step 6) measured
    at these lengths: level within noise, or growing; the clause follows the fitted line."""
    from viz.text.facts import kv_facts
    model = {"layers": 30, "kv_heads": 3, "head_dim": 64, "hidden_size": 576, "heads": 9, "dtype": "float32"}
    level, rising = lab_copy(), lab_copy()
    on = level["kv_cache"]["runs"]["cache_on"]
    on["step_ms"] = [on["step_ms"][0]] + [55.0 + (1.0 if i % 2 else -1.0) for i in range(len(on["step_ms"]) - 1)]
    up = rising["kv_cache"]["runs"]["cache_on"]
    up["step_ms"] = [up["step_ms"][0]] + [50.0 + 2.0 * i for i in range(len(up["step_ms"]) - 1)]
    held = said(lambda lang: kv_facts(level, model, lang)["kv_tie"])
    other = said(lambda lang: kv_facts(rising, model, lang)["kv_tie"])
    flips(held, other, {"en": ("within noise", "as 6 · Acceleration measures"), "zh": ("噪声范围内", "就实测到了这种增长")})
    f = kv_facts(LAB, model, "en")
    tokens = int(f["kv_context"])
    assert f["kv_at_context"] == fmt_bytes(2 * 30 * 3 * 64 * 4 * tokens)        # the formula at that context


def test_the_quoted_shares_and_ridges_are_computed_from_their_figures():
    """The embedding's share of the weights and the lens's kept state come from the model's config;
    the ridge points the profile heading, step 10 and the roofline's explanation quote come from the
    recorded lab's hardware (peak FLOP/s ÷ bandwidth, in prompt tokens)."""
    from viz.text.facts import model_facts, speed_facts
    model = {"layers": 30, "heads": 9, "kv_heads": 3, "hidden_size": 576, "vocab_size": 49152,
             "parameters": 134_515_008}                                     # SmolLM2-135M's config
    f = model_facts(model, 13, "en")
    assert f["embed_share"] == "21%" and f["lens_state"] == fmt_bytes(29 * 576 * 4)
    untied = model_facts({**model, "parameters": 2 * model["parameters"]}, 13, "en")
    assert untied["embed_share"] == "11%"
    roof = lab_copy()["roofline"]
    machine = next(h for h in roof["hardware"] if h["measured"])
    gpus = [h for h in roof["hardware"] if not h["measured"]]
    f = speed_facts(LAB)
    assert f["ridge_here"] == f"{lab_verdicts.ridge_tokens(machine):.0f}"
    assert f["ridge_gpus"] == verdicts.span([lab_verdicts.ridge_tokens(h) for h in gpus])
    faster = lab_copy()
    next(h for h in faster["roofline"]["hardware"] if h["measured"])["bandwidth_bytes_s"] *= 2   # half the ridge
    assert speed_facts(faster)["ridge_here"] == f"{lab_verdicts.ridge_tokens(machine) / 2:.0f}"
