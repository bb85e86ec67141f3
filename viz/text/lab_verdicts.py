"""The acceleration lab's verdicts (the KV cache, attention kernels, weight formats, the roofline and
the profile's bounds): each sentence chosen from the figure it talks about (viz/text/verdicts.py says how)."""

from __future__ import annotations

import math
import statistics

from engine.schema.specs import dtype_bytes
from viz.fmt import fmt_bytes, fmt_ms
from viz.text.labels import label
from viz.text.verdicts import _x, span, _pct, _join, _low_high, compare, SAME_SIZE, ONE_RUN


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


def kv_reading(lab: dict | None) -> tuple[float, float] | None:
    """(KV bytes per position, bandwidth in bytes/s) from the lab's roofline row of this model on this
    machine: what reading one more cached position costs a step, at the measured bandwidth."""
    roof = (lab or {}).get("roofline") or {}
    row = next((r for r in roof.get("rows") or [] if r.get("this_model") and r.get("hardware_measured")), None)
    machine = next((h for h in roof.get("hardware") or [] if h.get("measured")), None)
    if not row or not machine or not row.get("decode_context_tokens") or not machine.get("bandwidth_bytes_s"):
        return None
    return row["kv_bytes"] / row["decode_context_tokens"], machine["bandwidth_bytes_s"]


def kv_read_share(line: dict, reading: tuple[float, float] | None, lang: str) -> str:
    """How much of a rising cache-on line reading the extra cached positions explains: their bytes at
    the measured bandwidth against the fitted rise (a small share: the rise is mostly something else)."""
    rise = line["end"] - line["start"]
    if reading is None or line["trend"] != "grows" or rise <= 0:
        return ""
    per, bandwidth = reading
    grown = (line["b"] - line["a"]) * per
    read_ms = grown / bandwidth * 1e3
    share = read_ms / rise
    return label("verdict_kv_read_most" if share >= 0.5 else "verdict_kv_read_part", lang, n=line["b"] - line["a"],
                 bytes=f"{grown / 1e6:.3g} MB", bw=f"{bandwidth / 1e9:.3g} GB/s", read=fmt_ms(read_ms), share=_pct(share))


def kv_lines(part: dict, lang: str, reading: tuple[float, float] | None = None) -> str:
    """Whether the cache-on and the cache-off step times grow with the context: with the cache every
    step still reads all cached keys and values, so its line can rise too; the figure decides, and
    `reading` (kv_reading) says how much of a rise reading the cache explains."""
    runs, p = part.get("runs", {}), int(part.get("prompt_tokens") or 0)
    out = []
    for key, prefix in (("cache_on", "verdict_kv_on"), ("cache_off", "verdict_kv_off")):
        if key not in runs or len(runs[key]["step_ms"]) < 4:     # a line needs three decode steps
            continue
        line = kv_line(runs[key], p)
        out.append(label(f"{prefix}_{line['trend']}", lang, start=fmt_ms(line["start"]), end=fmt_ms(line["end"]),
                         a=line["a"], b=line["b"], margin=fmt_ms(line["margin"])))
        if key == "cache_on":
            out.append(kv_read_share(line, reading, lang))
    return _join([o for o in out if o], lang)


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
PREFILL_LIKE_DECODE = 1.25   # a memory-bound prefill's matmuls within this of the decode step's: the same reading
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
    # memory-bound reads the same weights as the decode step: it should take about the decode step's
    # time; where it took clearly longer, reading the weights is not what its time followed
    decode = ((profile["phases"].get("decode") or {}).get("ops")) or []
    pre_ms = sum(o["measured_ms"] for o in matmuls)
    dec_ms = sum(o["measured_ms"] for o in decode if o.get("family") == "matmul" and o.get("layers"))
    if case == "memory" and dec_ms > 0 and pre_ms > PREFILL_LIKE_DECODE * dec_ms:
        case = "memory_slower"
    return label(f"verdict_prof_prefill_{case}", lang, n=profile["phases"]["prefill"]["tokens"], ridge=f"{ridge:.0f}",
                 pre=fmt_ms(pre_ms), dec=fmt_ms(dec_ms), x=_x(pre_ms / dec_ms) if dec_ms > 0 else "")


def profile_matmuls(ratio: float | None, matmul_x: str, small_x: str, machine: dict, lang: str) -> str:
    """A profiled decode step's layer matmuls against their roofline time (`ratio`, measured ÷ bound):
    near it, or under it, which a lower bound cannot be unless the bandwidth it divides by was measured
    below what the machine reached while profiling (a shared machine's bandwidth moves with its load)."""
    if ratio is None or not math.isfinite(ratio):
        return ""
    key = "verdict_prof_matmul_under" if ratio < 1 else "verdict_prof_matmul_near"
    return label(key, lang, matmul_x=matmul_x, small_x=small_x,
                 bw=f"{(machine.get('bandwidth_bytes_s') or 0) / 1e9:.3g}")
