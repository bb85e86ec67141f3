"""Sentences that compare: each one computed from the figure it talks about.

A sentence such as "the cache-on line stays flat" or "int8 is faster" is a claim about a
measurement, so it is not written once in the catalogue but chosen here from the numbers: every
function below reads a figure (a lab section, an evaluation result, a trace's times), makes the
comparison it states, and returns the wording for what the figure shows, the claim or its
opposite, or "about the same" when the difference is within a stated tolerance (the run's own
min–max spread where it measured one). The sentences live in assets/strings/verdicts.json.

Pure functions of plain data: no torch, no Gradio (viz/ imports only the torch-free engine).
"""

from __future__ import annotations

import math
import statistics

from engine.schema.specs import dtype_bytes
from viz.fmt import fmt_bytes, fmt_ms
from viz.text.labels import label

SAME_SIZE = 0.05        # two sizes within 5 % are "about the same" (a byte count has no spread)
ONE_RUN = 0.10          # two single measurements within 10 % are "about the same"


def _x(ratio: float) -> str:
    """A ratio as the page writes it: "3.59×", "12.5×"."""
    return f"{ratio:.1f}×" if ratio >= 10 else f"{ratio:.2f}×"


times = _x           # the same, for the facts the fixed texts quote (viz/text/facts.py)


def span(values: list[float]) -> str:
    """Whole numbers from the smallest to the largest: "139–295" (one number when they round alike)."""
    lo, hi = f"{min(values):.0f}", f"{max(values):.0f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _pct(share: float) -> str:
    return f"{share:.0%}"


def _join(sentences: list[str], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(s for s in sentences if s)


def _low_high(spread: dict | None, median: float) -> tuple[float, float]:
    """A measurement's min and max over repeats (the median itself when none were kept)."""
    spread = spread or {}
    return float(spread.get("min", median)), float(spread.get("max", median))


def compare(a: float, a_range: tuple[float, float], b: float, b_range: tuple[float, float]) -> str:
    """"lower", "higher" or "same" for a against b: lower only when a's whole min–max range lies below
    b's, higher only when above it; overlapping ranges are "same" (within the run's spread)."""
    if a_range[1] < b_range[0]:
        return "lower"
    if a_range[0] > b_range[1]:
        return "higher"
    return "same"


# --- KV cache (lab experiment 1, and the walkthrough's step 6 chart) ----------------------------
def kv_line(run: dict, prompt_tokens: int) -> dict:
    """A straight line fitted (least squares) to one mode's median decode-step times: its value at
    the first and the last step, the context there (prompt + step), and its 95 % margin (two
    standard errors of the slope, over the steps): a change within it is noise, not a trend."""
    ms = run["step_ms"][1:]                                   # step 0 is the prefill
    n = len(ms)
    mean_x, mean_y = (n - 1) / 2, sum(ms) / n
    sxx = sum((x - mean_x) ** 2 for x in range(n))
    slope = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(ms)) / sxx
    residual = sum((y - mean_y - slope * (x - mean_x)) ** 2 for x, y in enumerate(ms))
    margin = 2 * math.sqrt(residual / (n - 2) / sxx) * (n - 1) if n > 2 else math.inf
    change = slope * (n - 1)
    trend = "grows" if change > margin else "falls" if change < -margin else "flat"
    return {"start": mean_y - slope * mean_x, "end": mean_y + slope * mean_x, "margin": margin,
            "trend": trend, "a": prompt_tokens + 1, "b": prompt_tokens + n}


def kv_lines(part: dict, lang: str) -> str:
    """Whether the cache-on and the cache-off step times grow with the context: with the cache every
    step still reads all cached keys and values, so its line can rise too; the figure decides."""
    runs, p = part.get("runs", {}), int(part.get("prompt_tokens") or 0)
    out = []
    for key, prefix in (("cache_on", "verdict_kv_on"), ("cache_off", "verdict_kv_off")):
        if key not in runs or len(runs[key]["step_ms"]) < 4:     # a line needs three decode steps
            continue
        line = kv_line(runs[key], p)
        out.append(label(f"{prefix}_{line['trend']}", lang, start=fmt_ms(line["start"]), end=fmt_ms(line["end"]),
                         a=line["a"], b=line["b"], margin=fmt_ms(line["margin"])))
    return _join(out, lang)


def kv_speedups(part: dict) -> tuple[float, float, float, int] | None:
    """The cache's end-to-end speed-up as (median, min, max, repeats) of the repeats' own speed-ups
    (each repeat times both modes, so each has its own ratio). The experiment's `speedup` is the ratio
    of the two median times, which need not be any repeat's: the page says the median of the ratios,
    and names the other where it says both."""
    x = part.get("speedup")
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        return None
    spread = part.get("speedup_spread") or {}
    runs = [r for r in spread.get("runs") or [] if r > 0]
    if runs:
        return statistics.median(runs), min(runs), max(runs), len(runs)
    if "median" in spread:            # a spread kept without its runs
        lo, hi = _low_high(spread, spread["median"])
        return float(spread["median"]), lo, hi, int(part.get("repeats") or 1)
    return x, x, x, 1                 # one measurement only: its ratio (5 % either way for the case)


def kv_speedup_case(part: dict) -> str | None:
    """"faster", "slower" or "same" end to end with the cache: faster only if every repeat's
    speed-up is above 1, slower only if every one is below 1 (one repeat: 5 % either way)."""
    found = kv_speedups(part)
    if found is None:
        return None
    x, lo, hi, n = found
    if n == 1:
        lo, hi = x * (1 - SAME_SIZE), x * (1 + SAME_SIZE)
    return "faster" if lo > 1 else "slower" if hi < 1 else "same"


def kv_title(part: dict, lang: str) -> str | None:
    """The KV chart's title: "KV cache: 2.94× faster end to end (median of 3 repeats)", or what the
    figure says instead."""
    case = kv_speedup_case(part)
    if case is None:
        return None
    x, _, _, n = kv_speedups(part)
    return label(f"verdict_kv_title_{case}", lang, x=_x(1 / x if case == "slower" else x), n=n)


def kv_speedup(part: dict, lang: str) -> str:
    """End to end with the cache against without: the median of the repeats' speed-ups, their range,
    and the ratio of the median times beside it."""
    case = kv_speedup_case(part)
    if case is None:
        return ""
    x, lo, hi, n = kv_speedups(part)
    said = label(f"verdict_kv_{case}", lang, x=_x(1 / x if case == "slower" else x), lo=_x(lo), hi=_x(hi), n=n)
    # the ratio of the two median times, named beside it only where it reads differently
    other = _x(part["speedup"]) if case == "faster" and _x(part["speedup"]) != _x(x) else None
    return _join([said, label("verdict_kv_of_medians", lang, of_medians=other) if other else ""], lang)


# --- attention kernels (lab experiment 2) -------------------------------------------------------
def attention(part: dict, lang: str, names: dict[str, str]) -> str:
    """At the longest prompt measured: each fused kernel's time and peak memory against eager's,
    and whether the logits agree within the experiment's tolerance."""
    rows = part.get("rows", [])
    longest = max((r["tokens"] for r in rows), default=None)
    at = {r["implementation"]: r for r in rows if r["tokens"] == longest}
    if "eager" not in at or len(at) < 2:
        return ""
    eager, out = at["eager"], []
    for impl, r in at.items():
        if impl == "eager":
            continue
        speed = compare(r["ms"], _low_high(r["spread"]["ms"], r["ms"]),
                        eager["ms"], _low_high(eager["spread"]["ms"], eager["ms"]))
        share = r["peak_bytes"] / max(eager["peak_bytes"], 1)
        memory = "same" if abs(share - 1) <= SAME_SIZE else "lower" if share < 1 else "higher"
        values = dict(n=longest, impl=names.get(impl, impl), ms=fmt_ms(r["ms"]), eager=fmt_ms(eager["ms"]),
                      x=_x(eager["ms"] / r["ms"]), peak=fmt_bytes(r["peak_bytes"]),
                      eager_peak=fmt_bytes(eager["peak_bytes"]), share=_pct(share), tol=_pct(SAME_SIZE))
        out += [label(f"verdict_attn_time_{speed}", lang, **values), label(f"verdict_attn_memory_{memory}", lang, **values)]
    out.append(label("verdict_attn_matrix", lang, matrix=fmt_bytes(eager["attention_matrix_bytes"])))
    return _join(out + [attention_result(part, lang)], lang)


def attention_result(part: dict, lang: str) -> str:
    """"same result" only if no kernel's logits differ from eager's by more than the tolerance."""
    tol = float(part.get("tolerance", 1e-3))
    diff = max((r["max_abs_logit_diff_vs_eager"] for r in part.get("rows", [])), default=0.0)
    return label("verdict_attn_same_result" if diff <= tol else "verdict_attn_other_result", lang,
                 diff=f"{diff:.1e}", tol=f"{tol:g}")


# --- weight formats (lab experiment 3, quantization) --------------------------------------------
def weight_format(row: dict, fp32: dict) -> tuple[str, str]:
    """(size, speed) of a format against fp32: size "lower"/"same"/"higher" (within 5 %), speed by
    TPOT "lower"/"same"/"higher" (its min–max over repeats against fp32's; lower TPOT = faster)."""
    share = row["weight_bytes"] / fp32["weight_bytes"]
    size = "same" if abs(share - 1) <= SAME_SIZE else "lower" if share < 1 else "higher"

    def tpot(r: dict) -> tuple[float, tuple[float, float]]:
        lo, hi = _low_high((r.get("spread") or {}).get("tpot_ms"), r["tpot_ms"])
        if lo == hi:                                    # one run: 10 % either way
            lo, hi = r["tpot_ms"] * (1 - ONE_RUN / 2), r["tpot_ms"] * (1 + ONE_RUN / 2)
        return r["tpot_ms"], (lo, hi)
    return size, compare(*tpot(row), *tpot(fp32))


def weights(part: dict, lang: str, names: dict[str, str]) -> str:
    """One sentence per format measured here: its weight memory and its time per token against fp32;
    where a smaller format decoded slower, why that can be (no kernel made for it here)."""
    ok = {r["format"]: r for r in part.get("rows", []) if r.get("available") and r.get("tpot_ms")}
    fp32 = ok.get("fp32")
    if fp32 is None:
        return ""
    out, slower = [], []
    for key, r in ok.items():
        if key == "fp32":
            continue
        size, speed = weight_format(r, fp32)
        name = names.get(key, key)
        faster = {"lower": "faster", "higher": "slower", "same": "same"}[speed]      # a lower TPOT is faster
        out.append(label(f"verdict_w_{'smaller' if size == 'lower' else 'not_smaller'}_{faster}", lang, fmt=name,
                         share=_pct(r["weight_bytes"] / fp32["weight_bytes"]), tpot=fmt_ms(r["tpot_ms"]),
                         base=fmt_ms(fp32["tpot_ms"])))
        if size == "lower" and speed == "higher":
            slower.append(name)
    if slower:
        out.append(label("verdict_w_no_kernel", lang, fmts=("、" if lang == "zh" else ", ").join(slower)))
    return _join(out, lang)


def baseline(part: dict, lang: str, brief: bool = False) -> str:
    """What the fp32 row of the weights experiment is: the file the model ships as, dequantized at
    load, when the experiment says it came from one (its `gguf` entry), else just the baseline;
    `brief` leaves out what that means for the quality figures (said where the space is)."""
    gguf = (part or {}).get("gguf")
    if gguf:
        key = "lab_baseline_gguf_brief" if brief else "lab_baseline_gguf"
        return label(key, lang, file=gguf.get("format") or gguf.get("file", "GGUF"))
    return label("lab_baseline_plain", lang)


# --- the roofline: where a prefill turns from memory- to compute-bound ---------------------------
def ridge_tokens(hardware: dict) -> float:
    """The prompt length where a prefill's matrix multiplies turn from memory- to compute-bound on
    `hardware`. Each weight, read once (b bytes), is multiplied and added once per prompt token: T
    tokens do 2·T FLOPs per b bytes read. The machine's ridge point is its peak FLOP/s ÷ bandwidth (FLOP
    per byte), so the two bounds meet at T = ridge · b / 2 (activations left out: they are small
    beside the weights at these lengths)."""
    ridge = hardware["peak_flops"] / hardware["bandwidth_bytes_s"]
    return ridge * dtype_bytes(hardware.get("precision") or "bfloat16") / 2


def roofline_prefill(part: dict, lang: str) -> str:
    """For the prompt the roofline experiment timed: is this model's prefill bound by arithmetic or by
    reading the weights, here and on each projected GPU (the rows' own `ttft_bound_by`), with the
    ridge points in tokens that decide it."""
    hardware = {h["name"]: h for h in part.get("hardware") or []}
    rows = [r for r in part.get("rows") or [] if r.get("this_model") and r.get("hardware") in hardware]
    out = []
    here = next((r for r in rows if r.get("hardware_measured")), None)
    if here is not None and here.get("ttft_bound_by") in ("compute", "memory"):
        out.append(label(f"verdict_prefill_here_{here['ttft_bound_by']}", lang, p=here["prompt_tokens"],
                         ridge=f"{ridge_tokens(hardware[here['hardware']]):.0f}"))
    for bound in ("memory", "compute"):
        group = [r for r in rows if not r.get("hardware_measured") and r.get("ttft_bound_by") == bound]
        if group:
            out.append(label(f"verdict_prefill_gpus_{bound}", lang,
                             gpus=("、" if lang == "zh" else ", ").join(r["hardware"] for r in group),
                             ridges=span([ridge_tokens(hardware[r["hardware"]]) for r in group])))
    return _join(out, lang)


def profile_prefill(profile: dict, lang: str) -> str:
    """Whether a profiled prefill's layer matrix multiplies were compute- or memory-bound (most of
    them, as the profile's own roofline marks each), beside this machine's ridge point in tokens."""
    ops = ((profile.get("phases") or {}).get("prefill") or {}).get("ops") or []
    matmuls = [o for o in ops if o.get("family") == "matmul" and o.get("layers") and o.get("bound")]
    machine = profile.get("machine") or {}
    if not matmuls or not machine.get("peak_flops") or not machine.get("bandwidth_bytes_s"):
        return ""
    case = "compute" if 2 * sum(o["bound"] == "compute" for o in matmuls) > len(matmuls) else "memory"
    ridge = ridge_tokens({**machine, "precision": profile.get("dtype")})
    return label(f"verdict_prof_prefill_{case}", lang, n=profile["phases"]["prefill"]["tokens"], ridge=f"{ridge:.0f}")


def profile_matmuls(ratio: float | None, matmul_x: str, small_x: str, machine: dict, lang: str) -> str:
    """A profiled decode step's layer matmuls against their roofline time (`ratio`, measured ÷ bound):
    near it, or under it, which a lower bound cannot be unless the bandwidth it divides by was measured
    below what the machine reached while profiling (a shared machine's bandwidth moves with its load)."""
    if ratio is None or not math.isfinite(ratio):
        return ""
    key = "verdict_prof_matmul_under" if ratio < 1 else "verdict_prof_matmul_near"
    return label(key, lang, matmul_x=matmul_x, small_x=small_x,
                 bw=f"{(machine.get('bandwidth_bytes_s') or 0) / 1e9:.3g}")


# --- batching (lab experiment 5) ----------------------------------------------------------------
def batch_grows_from(part: dict) -> int | None:
    """The first batch whose step time reaches the threshold (1.25× unless the run says) times
    batch 1's, as the engine marks it; None if none does. The chart's mark and the verdict use it."""
    rows = sorted(part.get("rows") or [], key=lambda r: r["batch"])
    if len(rows) < 2:
        return None
    threshold = float(part.get("grows_threshold") or 1.25)
    one = rows[0]["step_ms"]["median"]
    return next((r["batch"] for r in rows[1:] if r["step_ms"]["median"] >= threshold * one), None)


def batching(part: dict, lang: str) -> str:
    """Where the step time starts to grow with the batch, against where the roofline says the
    arithmetic takes over (its ridge): compute caps batching only if the growth starts at the ridge."""
    rows = sorted(part.get("rows") or [], key=lambda r: r["batch"])
    if len(rows) < 2:
        return ""
    threshold = float(part.get("grows_threshold") or 1.25)
    one = rows[0]["step_ms"]["median"]
    grows = next((r for r in rows if r["batch"] == batch_grows_from(part)), None)
    ridge = next((r["batch"] for r in rows if "compute_bound_ms" in r
                  and r["compute_bound_ms"] >= r["bandwidth_bound_ms"]), None)
    values = dict(thr=_x(threshold), one=fmt_ms(one), ridge=ridge, top=rows[-1]["batch"],
                  last=fmt_ms(rows[-1]["step_ms"]["median"]))
    if grows is None:
        return label("verdict_batch_free", lang, **values)
    values.update(b=grows["batch"], ms=fmt_ms(grows["step_ms"]["median"]), x=_x(grows["step_ms"]["median"] / one))
    if ridge is not None and grows["batch"] >= ridge:
        return label("verdict_batch_compute", lang, **values)
    early = label("verdict_batch_early" if ridge is not None else "verdict_batch_early_no_ridge", lang, **values)
    return _join([early, batch_cause(rows[0], grows, lang)], lang)


def batch_cause(one: dict, grown: dict, lang: str) -> str:
    """What the figures say about a step that grew below the ridge: memory traffic only if the
    roofline's bound (bytes ÷ bandwidth there) grew at least half as much as the step did; else
    the growth lies outside what the roofline counts. Needs the rows' bytes and bounds."""
    if not one.get("bytes") or not one.get("bound_ms") or not grown.get("bound_ms"):
        return ""
    step = grown["step_ms"]["median"] / one["step_ms"]["median"] - 1
    bound = grown["bound_ms"] / one["bound_ms"] - 1
    case = "memory" if step > 0 and bound >= step / 2 else "other"
    return label(f"verdict_batch_cause_{case}", lang, bytes=_share_up(grown["bytes"] / one["bytes"] - 1),
                 bound=_share_up(bound), b=grown["batch"])


def _share_up(change: float) -> str:
    """A growth as a percentage, with a decimal when it is small: "0.4%", "66%"."""
    return f"{change:.1%}" if abs(change) < 0.1 else f"{change:.0%}"


# --- verifying k tokens (lab experiment 6) ------------------------------------------------------
def verify(part: dict, lang: str) -> str:
    """Whether one pass over k tokens stays as cheap as a one-token pass (their spreads overlap), up
    to which k; and whether the largest k's pass is cheaper than k one-token passes."""
    rows = sorted(part.get("rows") or [], key=lambda r: r["k"])
    if len(rows) < 2:
        return ""
    one = rows[0]["ms"]
    flat_to = None
    for r in rows[1:]:                      # the first ks in a row whose spread reaches one token's
        if r["ms"]["min"] > one["max"]:
            break
        flat_to = r
    shown = flat_to or rows[1]              # how far it stayed flat, or the first k that rose
    out = [label("verdict_verify_flat" if flat_to else "verdict_verify_rises", lang, k=shown["k"],
                 ms=fmt_ms(shown["ms"]["median"]), one=fmt_ms(one["median"]),
                 x=_x(shown["ms"]["median"] / one["median"]))]
    last = rows[-1]
    k = last["k"]
    cost = compare(last["ms"]["median"], (last["ms"]["min"], last["ms"]["max"]),
                   k * one["median"], (k * one["min"], k * one["max"]))
    out.append(label(f"verdict_verify_k_{cost}", lang, k=k, ms=fmt_ms(last["ms"]["median"]),
                     kms=fmt_ms(k * one["median"]), per=fmt_ms(last["ms"]["median"] / k)))
    return _join(out, lang)


# --- speculative decoding (lab experiment 7) ----------------------------------------------------
def speculative(part: dict, lang: str, names: dict[str, str]) -> str:
    """The fastest speculative arm against plain greedy, by tokens/s over the repeats' min–max
    (faster only if its slowest repeat beat plain greedy's fastest)."""
    rows = {r["arm"]: r for r in part.get("rows") or []}
    plain = rows.get("plain")
    arms = [r for k, r in rows.items() if k != "plain"]
    if plain is None or not arms:
        return ""
    best = max(arms, key=lambda r: r["tokens_per_s"])

    def rate(r: dict) -> tuple[float, tuple[float, float]]:
        n = r["new_tokens"] * 1000
        return r["tokens_per_s"], (n / r["ms"]["max"], n / r["ms"]["min"])
    case = compare(*rate(best), *rate(plain))
    return label({"higher": "verdict_spec_faster", "lower": "verdict_spec_slower", "same": "verdict_spec_same"}[case],
                 lang, arm=names.get(best["arm"], best["arm"]), x=_x(best["tokens_per_s"] / plain["tokens_per_s"]),
                 rate=f"{best['tokens_per_s']:.1f}", plain=f"{plain['tokens_per_s']:.1f}", n=best["new_tokens"],
                 passes=best["passes"], plain_passes=plain["passes"], acc=best["accepted"],
                 drafted=best["accepted"] + best["rejected"])


# --- speed chapter ------------------------------------------------------------------------------
def ttft_by_length(rows: list[dict], lang: str) -> list[str]:
    """Whether TTFT grew from the shortest prompt to the longest, one line per run kind ("cache on",
    ...) when the rows name one (one run per length: within 10 % is "about the same")."""
    kinds = list(dict.fromkeys(r.get("runs") for r in rows))
    lines = []
    for kind in kinds:
        own = sorted((r for r in rows if r.get("runs") == kind and r.get("ttft_ms")), key=lambda r: r["prompt_tokens"])
        if len(own) < 2:
            continue
        a, b = own[0], own[-1]
        change = b["ttft_ms"] / a["ttft_ms"] - 1
        case = "grows" if change > ONE_RUN else "falls" if change < -ONE_RUN else "flat"
        line = label(f"verdict_ttft_{case}", lang, a=fmt_ms(a["ttft_ms"]), b=fmt_ms(b["ttft_ms"]),
                     n=a["prompt_tokens"], m=b["prompt_tokens"], x=_x(b["ttft_ms"] / a["ttft_ms"]), tol=_pct(ONE_RUN))
        lines.append(label("verdict_of", lang, what=kind, text=line) if kind is not None and len(kinds) > 1 else line)
    return lines


def prefill_rate(prefill_per_s: float | None, tpot_ms: float | None, lang: str) -> str:
    """The prefill-rate card's line: prompt tokens per second against this run's decode rate."""
    if not prefill_per_s or not tpot_ms:
        return label("verdict_prefill_rate_plain", lang)
    decode = 1000 / tpot_ms
    ratio = prefill_per_s / decode
    case = "faster" if ratio > 1 + ONE_RUN else "slower" if ratio < 1 - ONE_RUN else "same"
    return label(f"verdict_prefill_rate_{case}", lang, x=_x(ratio), decode=f"{decode:.3g}", tol=_pct(ONE_RUN))


# --- reasoning chapter --------------------------------------------------------------------------
def eval_budgets(result: dict, lang: str) -> str:
    """The best and worst budget's counts with their 95 % confidence intervals: one budget is called
    better only when the intervals do not overlap."""
    rows = result.get("budgets") or []
    if len(rows) < 2:
        return ""
    best = max(rows, key=lambda r: r["accuracy"])
    worst = min(rows, key=lambda r: r["accuracy"])
    values = dict(best=best["budget"], bc=best["correct"], bn=best["questions"], blo=_pct(best["ci95"][0]),
                  bhi=_pct(best["ci95"][1]), worst=worst["budget"], wc=worst["correct"], wn=worst["questions"],
                  wlo=_pct(worst["ci95"][0]), whi=_pct(worst["ci95"][1]), n=int(max(r["questions"] for r in rows)))
    if best["accuracy"] == worst["accuracy"]:
        return label("verdict_eval_equal", lang, **values)
    apart = best["ci95"][0] > worst["ci95"][1]
    return label("verdict_eval_separate" if apart else "verdict_eval_overlap", lang, **values)


def answer(first: str | None, first_right: bool, last: str | None, last_right: bool, lang: str) -> str:
    """What one answer said, judged whole: the answer the evaluation reads (its first line with a
    number) and, if the text ends on another one, that too, so a right number followed by working
    that reaches a wrong one is not called right without saying so."""
    if first is None:
        return label("verdict_no_answer", lang)
    said = label("verdict_said_right" if first_right else "verdict_said_wrong", lang, answer=first)
    if last is None or last == first:
        return label("verdict_answered", lang, said=said)
    ended = label("verdict_said_right" if last_right else "verdict_said_wrong", lang, answer=last)
    return label("verdict_answered_then", lang, said=said, ended=ended)


# --- fork: the reused prefix against recomputing it -----------------------------------------------
def fork_reuse(recompute_ms: float | None, reuse_ms: float | None, lang: str) -> str:
    """After a fork: whether reusing the cached prefix was faster than recomputing it (one run
    each: within 10 % is "about the same"), and so whether this measurement shows why servers keep
    prefixes or only that this prefix was too short to matter."""
    if not recompute_ms or not reuse_ms:
        return label("verdict_fork_why", lang)
    ratio = recompute_ms / reuse_ms
    case = "faster" if ratio > 1 + ONE_RUN else "slower" if ratio < 1 - ONE_RUN else "same"
    return label(f"verdict_fork_reuse_{case}", lang, x=_x(ratio), tol=_pct(ONE_RUN))


def first_answer(normal_ms: float | None, reasoning_ms: float | None, lang: str) -> str:
    """When each run's first answer token came: later in reasoning mode only if it came more than
    10 % later (one run each)."""
    if not normal_ms or not reasoning_ms:
        return ""
    ratio = reasoning_ms / normal_ms
    case = "later" if ratio > 1 + ONE_RUN else "sooner" if ratio < 1 - ONE_RUN else "same"
    return label(f"verdict_ttfa_{case}", lang, r=fmt_ms(reasoning_ms), n=fmt_ms(normal_ms), x=_x(ratio),
                 tol=_pct(ONE_RUN))
