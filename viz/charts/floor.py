"""The serving floor drawn from a Floor file: request lanes, KV blocks, step cost and the three ways.

Every figure is the file's: the lanes are the library's timestamps, the blocks its allocator's
tables and reference counts, the ways' figures measured in the same run (engine/floor/serve.py).
"""

from __future__ import annotations

import statistics

import altair as alt
import pandas as pd

from engine.schema.floor import MODES, Floor

from viz.fmt import fmt_bytes, fmt_ms
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, ORANGE, PURPLE, STACK_NARROW, when_narrow

KINDS = ("waiting", "prefill", "decoding")
OWN_BLUES = ["#3a6fd8", "#6b93e3", "#2d58b0", "#9bb6ec", "#1f3f80", "#5277c9", "#84a4e6", "#3a5fa8"]


def lane_name(floor: Floor, i: int) -> str:
    """A request's row: its number, or for a fork tree's lineages the lineage ("run", "b1", ...)."""
    return floor.lanes[i].id if floor.settings.source == "branches" else f"#{i + 1}"


def lanes_frame(floor: Floor, lang: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Segments (waiting, each prefill chunk, decoding) and token ticks, in seconds."""
    names = {k: label(f"floor_{k}", lang) for k in KINDS}
    rows, ticks = [], []
    for i, lane in enumerate(floor.lanes):
        name = lane_name(floor, i)
        spans = [("waiting", lane.arrival_ms, lane.start_ms, 0)]
        spans += [("prefill", c[0], c[1], int(c[2])) for c in lane.chunks]
        spans.append(("decoding", lane.token_ms[0], lane.token_ms[-1], len(lane.tokens)))
        for kind, start, end, tokens in spans:
            rows.append({"lane": name, "kind": names[kind], "start": start / 1000, "end": max(end, start + 1) / 1000,
                         "tokens": tokens, "ms": fmt_ms(end - start)})
        ticks += [{"lane": name, "t": t / 1000, "n": n + 1} for n, t in enumerate(lane.token_ms)]
    return pd.DataFrame(rows), pd.DataFrame(ticks)


def lanes_chart(floor: Floor, lang: str = "en") -> alt.LayerChart:
    segments, ticks = lanes_frame(floor, lang)
    order = [lane_name(floor, i) for i in range(len(floor.lanes))]
    y = alt.Y("lane:N", sort=order, title=label("floor_request", lang))
    x = alt.X("start:Q", title=label("floor_seconds", lang))
    kinds = [label(f"floor_{k}", lang) for k in KINDS]
    bars = alt.Chart(segments).mark_bar(height=12).encode(
        x=x, x2="end:Q", y=y,
        color=alt.Color("kind:N", title=None, legend=alt.Legend(orient="top", columns=STACK_NARROW),
                        scale=alt.Scale(domain=kinds, range=[GREY, ORANGE, "#a9c1f0"])),
        tooltip=[alt.Tooltip("lane:N", title=label("floor_request", lang)), alt.Tooltip("kind:N", title=" "),
                 alt.Tooltip("ms:N", title=label("floor_duration", lang)),
                 alt.Tooltip("tokens:Q", title=label("floor_tokens", lang))])
    marks = alt.Chart(ticks).mark_tick(color=BLUE, thickness=1.5, size=12).encode(
        x=alt.X("t:Q"), y=y, tooltip=[alt.Tooltip("lane:N", title=label("floor_request", lang)),
                                      alt.Tooltip("n:Q", title=label("floor_token_n", lang)),
                                      alt.Tooltip("t:Q", title=label("floor_seconds", lang), format=".2f")])
    c = floor.mode("continuous")
    title = alt.Title(label("floor_lanes_title", lang, n=len(floor.lanes)), subtitle=label(
        "floor_lanes_sub", lang, tokens=c.tokens, wall=fmt_ms(c.wall_ms), tput=f"{c.throughput:.1f}",
        arrival=label(f"floor_arrival_{floor.settings.arrival}", lang, rate=f"{floor.settings.rate:g}")))
    return alt.layer(bars, marks, title=title).properties(width=620, height=max(160, 24 * len(floor.lanes)))


def blocks_frame(floor: Floor) -> pd.DataFrame:
    """Per step: each request's own blocks and the blocks several requests hold (counted once)."""
    rows = []
    for f in floor.frames:
        holders = {b: n for b, n in f.refs}          # the allocator's reference counts
        held = {b for t in f.tables for b in t}
        common = held & holders.keys()
        rows.append({"t": f.start_ms / 1000, "series": "shared", "blocks": len(common),
                     "holders": sum(holders[b] for b in common)})
        for i, table in enumerate(f.tables):
            rows.append({"t": f.start_ms / 1000, "series": lane_name(floor, i),
                         "blocks": len([b for b in table if b not in holders]), "holders": None})
    return pd.DataFrame(rows)


def blocks_chart(floor: Floor, lang: str = "en") -> alt.LayerChart:
    data = blocks_frame(floor)
    shared = label("floor_shared_blocks", lang)
    data["series"] = data["series"].replace({"shared": shared})
    order = [shared] + [lane_name(floor, i) for i in range(len(floor.lanes))]
    colors = [PURPLE] + [OWN_BLUES[i % len(OWN_BLUES)] for i in range(len(floor.lanes))]
    area = alt.Chart(data).mark_area(interpolate="step-after", opacity=0.85).encode(
        x=alt.X("t:Q", title=label("floor_seconds", lang)),
        y=alt.Y("blocks:Q", stack="zero", title=label("floor_blocks_axis", lang)),
        color=alt.Color("series:N", sort=order, title=None, scale=alt.Scale(domain=order, range=colors),
                        # below the chart, three to a row in a phone's column (at the side, the
                        # legend left a phone's plot a sliver)
                        legend=alt.Legend(orient="bottom", symbolLimit=20,
                                          columns=when_narrow(3, 0))),
        order=alt.Order("rank:Q"),
        tooltip=[alt.Tooltip("series:N", title=" "), alt.Tooltip("blocks:Q", title=label("floor_blocks", lang)),
                 alt.Tooltip("holders:Q", title=label("floor_holders", lang)),
                 alt.Tooltip("t:Q", title=label("floor_seconds", lang), format=".2f")]
    ).transform_calculate(rank=f"indexof({order!r}, datum.series)")
    cache, m = floor.cache, floor.model
    per_token = cache.bytes_per_block // cache.page_size
    sub = [label("floor_blocks_sub", lang, page=cache.page_size, per_token=fmt_bytes(per_token),
                 block=fmt_bytes(cache.bytes_per_block), layers=m.layers)]
    layers = [area]
    if floor.unshared is not None:
        sub.append(label("floor_blocks_unshared", lang, shared=cache.peak_blocks, unshared=floor.unshared.peak_blocks))
        rule = pd.DataFrame({"y": [floor.unshared.peak_blocks], "text": [label("floor_peak_unshared", lang)]})
        layers += [alt.Chart(rule).mark_rule(strokeDash=[6, 4], color=INK).encode(y="y:Q"),
                   alt.Chart(rule).mark_text(align="left", dx=4, dy=-8, color=INK).encode(
                       y="y:Q", x=alt.value(0), text="text:N")]
    title = alt.Title(label("floor_blocks_title", lang, peak=cache.peak_blocks,
                            bytes=fmt_bytes(cache.peak_blocks * cache.bytes_per_block)), subtitle=sub)
    return alt.layer(*layers, title=title).properties(width=480, height=240)


def step_cost(floor: Floor) -> pd.DataFrame:
    """Decode-only steps: how many requests were in the batch and how long the step took."""
    rows = [{"requests": n, "ms": ms} for n, times in floor.decode_steps().items() for ms in times]
    return pd.DataFrame(rows, columns=["requests", "ms"])


def step_ratio(floor: Floor) -> tuple[int, float] | None:
    """(largest batch, median step ms there / median step ms for one request), if both were seen."""
    data = step_cost(floor)
    if data.empty or 1 not in set(data["requests"]) or data["requests"].max() == 1:
        return None
    most = int(data["requests"].max())
    one = statistics.median(data.loc[data["requests"] == 1, "ms"])
    return most, statistics.median(data.loc[data["requests"] == most, "ms"]) / one


def step_cost_chart(floor: Floor, lang: str = "en") -> alt.LayerChart:
    data = step_cost(floor)
    most = int(data["requests"].max()) if not data.empty else 1
    x = alt.X("requests:Q", title=label("floor_batch_axis", lang), axis=alt.Axis(tickMinStep=1, format="d"),
              scale=alt.Scale(domain=[0, max(most, 2)], nice=False))
    y = alt.Y("ms:Q", title=label("floor_step_ms", lang), scale=alt.Scale(zero=True))
    points = alt.Chart(data).mark_circle(size=40, opacity=0.5, color=BLUE).encode(x=x, y=y)
    median = alt.Chart(data).mark_line(color=ORANGE, point=True, strokeWidth=2.5).encode(x=x, y="median(ms):Q")
    ratio = step_ratio(floor)
    if ratio:
        sub = label("floor_step_sub", lang, n=ratio[0], ratio=f"{ratio[1]:.1f}")
    else:       # no single-request step to compare with, or only those (the requests never overlapped)
        sub = label("floor_step_sub_single" if most == 1 and not data.empty else "floor_step_sub_none", lang)
    return alt.layer(points, median, title=alt.Title(label("floor_step_title", lang), subtitle=sub)).properties(
        width=300, height=240)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def modes_frame(floor: Floor, lang: str) -> pd.DataFrame:
    rows = []
    for name in MODES:
        m = floor.mode(name)
        rows.append({label("floor_way", lang): label(f"floor_mode_{name}", lang),
                     label("floor_throughput", lang): f"{m.throughput:.1f}",
                     label("floor_ttft_p50", lang): fmt_ms(percentile(m.ttft_ms, 0.5)),
                     label("floor_ttft_p95", lang): fmt_ms(percentile(m.ttft_ms, 0.95)),
                     label("floor_e2el_p50", lang): fmt_ms(percentile(m.e2el_ms, 0.5)),
                     label("floor_memory", lang): label(f"floor_memory_{name}", lang, size=fmt_bytes(m.memory_bytes))})
    return pd.DataFrame(rows)


def requests_frame(floor: Floor, lang: str) -> pd.DataFrame:
    rows = []
    for i, lane in enumerate(floor.lanes):
        rows.append({label("floor_request", lang): lane_name(floor, i),
                     label("floor_prompt_tokens", lang): lane.prompt_tokens,
                     label("floor_reused", lang): lane.reused_tokens,
                     "TTFT": fmt_ms(lane.ttft_ms), "TPOT": fmt_ms(lane.tpot_ms), "E2EL": fmt_ms(lane.e2el_ms),
                     label("floor_tokens", lang): len(lane.tokens),
                     label("floor_same", lang): label("yes" if lane.same_as_generate else "no", lang)})
    return pd.DataFrame(rows)


def modes_chart(floor: Floor, lang: str = "en") -> alt.HConcatChart:
    """Throughput and p50/p95 TTFT of the three ways, side by side."""
    names = [label(f"floor_mode_{n}", lang) for n in MODES]
    tput = pd.DataFrame({"way": names, "v": [floor.mode(n).throughput for n in MODES]})
    median = label("floor_median", lang)
    ttft = pd.DataFrame([{"way": label(f"floor_mode_{n}", lang), "q": q, "v": percentile(floor.mode(n).ttft_ms, p) / 1000}
                         for n in MODES for q, p in ((median, 0.5), ("p95", 0.95))])
    color = alt.Color("way:N", legend=None, scale=alt.Scale(domain=names, range=[BLUE, GREY, ORANGE]))
    left = alt.Chart(tput, title=label("floor_throughput", lang)).mark_bar().encode(
        x=alt.X("v:Q", title=None), y=alt.Y("way:N", sort=names, title=None), color=color,
        tooltip=[alt.Tooltip("v:Q", format=".1f", title=label("floor_throughput", lang))])
    right = alt.Chart(ttft, title=label("floor_ttft_title", lang)).mark_bar().encode(
        x=alt.X("v:Q", title=None), y=alt.Y("way:N", sort=names, title=None), yOffset="q:N", color=color,
        opacity=alt.Opacity("q:O", sort=[median, "p95"], scale=alt.Scale(domain=[median, "p95"], range=[1.0, 0.55]),
                            legend=alt.Legend(orient="bottom", columns=STACK_NARROW, title=None)),
        tooltip=[alt.Tooltip("q:N"), alt.Tooltip("v:Q", format=".2f", title=label("floor_seconds", lang))])
    # the median/p95 legend is the right chart's own, under it (a shared legend sat under the left one).
    # Heights by step, not fixed: a fixed height beside a yOffset made Vega-Lite warn of a conflicting
    # scale range in the page's console; 20 px per bar pair gives both charts the same 3 × 40 px
    return alt.hconcat(left.properties(width=320, height=alt.Step(40)),
                       right.properties(width=320, height=alt.Step(20, **{"for": "offset"}))
                       ).resolve_legend(opacity="independent")


def verdict_md(floor: Floor, lang: str = "en") -> str:
    """What the run shows, said from its own figures: faster or not, tokens equal, the slowest TTFT."""
    c, alone, static = (floor.mode(n) for n in MODES)
    ratio = c.throughput / alone.throughput if alone.throughput else 0.0
    key = "floor_verdict_faster" if ratio >= 1.05 else "floor_verdict_slower"
    same = sum(lane.same_as_generate for lane in floor.lanes)
    first = label(key, lang, n=len(floor.lanes), tput=f"{c.throughput:.1f}", ratio=f"{ratio:.2f}",
                  alone=f"{alone.throughput:.1f}", same=same, why=why_not_faster(floor, lang) if key.endswith("slower") else "")
    return first + ("" if lang == "zh" else " ") + label("floor_verdict_ttft", lang, cont=fmt_ms(percentile(c.ttft_ms, 0.95)),
                               alone=fmt_ms(percentile(alone.ttft_ms, 0.95)),
                               static=fmt_ms(percentile(static.ttft_ms, 0.95)))


def why_not_faster(floor: Floor, lang: str = "en") -> str:
    """Why continuous batching was not faster here, read from the run's own decode steps: the
    requests seldom shared a step (fewer than half of the decode steps had more than one request),
    or they did and a shared step cost nearly as much as one step per request (the step-cost ratio at
    least 80 % of the batch), or they did, cheaply or with no single-request step to compare with, and
    the run was still not faster (said without a reason the figures do not give)."""
    steps = floor.decode_steps()
    total = sum(len(ms) for ms in steps.values())
    together = sum(len(ms) for n, ms in steps.items() if n > 1)
    values = dict(together=together, steps=total)
    if 2 * together < total or not together:
        return label("floor_why_apart", lang, **values)
    ratio = step_ratio(floor)
    if ratio is None or ratio[1] < COSTLY * ratio[0]:
        return label("floor_why_overlap", lang, **values)
    return label("floor_why_costly", lang, most=ratio[0], step_x=f"{ratio[1]:.1f}", **values)


COSTLY = 0.8       # a step for n requests costing at least 0.8·n single steps saves little by sharing


def ties_md(floor: Floor, lang: str = "en") -> str:
    """The floor tied to the chapters before it, with this run's numbers."""
    cache = floor.cache
    alone, static = floor.mode("one_at_a_time"), floor.mode("static")
    kv = label("floor_tie_kv", lang, page=cache.page_size, per_token=fmt_bytes(cache.bytes_per_block // cache.page_size),
               block=fmt_bytes(cache.bytes_per_block), peak=cache.peak_blocks,
               held=fmt_bytes(cache.peak_blocks * cache.bytes_per_block), alone=fmt_bytes(alone.memory_bytes),
               static=fmt_bytes(static.memory_bytes))
    if floor.settings.source == "branches" and floor.unshared is not None:     # a fork tree's lineages
        return "\n\n".join([kv, label("floor_tie_fork_measured", lang, n=len(floor.lanes), shared=cache.peak_blocks,
                                        unshared=floor.unshared.peak_blocks)])
    reused = sum(lane.reused_tokens for lane in floor.lanes)
    prefix = (label("floor_tie_prefix", lang, reused=reused, shared=cache.peak_blocks,
                    unshared=floor.unshared.peak_blocks) if floor.unshared is not None
              else label("floor_tie_prefix_none", lang))
    return "\n\n".join([kv, prefix, label("floor_tie_fork", lang)])
