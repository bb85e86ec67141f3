"""The verdicts of what servers do (the lab's batching, verifying k tokens, speculative decoding):
each sentence chosen from the figure it talks about (viz/text/verdicts.py says how)."""

from __future__ import annotations

from viz.fmt import fmt_ms
from viz.text.labels import label
from viz.text.verdicts import _x, _join, compare


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
