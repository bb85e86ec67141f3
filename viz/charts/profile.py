"""Where a pass's time goes: each op measured beside the roofline's time for it (engine/profile).

`ops_chart` is one pass (prefill or a decode step): per op, summed over the layers, the measured time
as a bar and the roofline's time as a tick, on one log axis, with measured ÷ roofline written beside;
`lanes_chart` is the same pass layer by layer (a lane per op, a cell per layer), coloured by how far
each cell is from its bound. `profile_chart` puts the two side by side; `projection_chart` draws the
profile's projection onto other GPUs and models. Input: the plain dict `python -m engine profile
--json` prints (no torch here).
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from viz.fmt import fmt_ms, wrap_lines
from viz.text import lab_verdicts
from viz.text.labels import label
from viz.charts.theme import BLUE, GREY, INK, ORANGE, PURPLE, STACK_NARROW

PASS_OPS = ("embed", "rope_tables", "input_norm", "q_proj", "k_proj", "v_proj", "qkv_proj", "qk_norm", "attention",
            "o_proj", "post_norm", "ffn_norm", "gate_proj", "up_proj", "gate_up_proj", "act_mul", "act", "router",
            "experts", "down_proj", "post_ffn_norm", "extra_norm", "residual", "final_norm", "lm_head", "other",
            "sampling", "watching")
FLOOR_MS = 1e-4          # a log axis cannot show 0: times below 0.1 µs are drawn at it


def op_name(op: str, lang: str, profile: dict | None = None) -> str:
    if op == "attention":
        return attention_name(profile, lang)
    return label(f"prof_op_{op}", lang, act=activation_name(profile, lang)) if op == "act_mul" else label(f"prof_op_{op}", lang)


ACTIVATIONS = {"silu": "SiLU", "swish": "SiLU", "relu": "ReLU", "gelu": "GELU"}


def activation_name(profile: dict | None, lang: str) -> str:
    """The MLP activation the profile recorded ("gelu_pytorch_tanh" -> "GELU"); "activation" where it
    recorded none (an older profile)."""
    act = str((profile or {}).get("activation") or "")
    return ACTIVATIONS.get(act) or ("GELU" if act.startswith("gelu") else label("prof_act_plain", lang))


IMPLS = {"sdpa": "SDPA", "eager": "eager", "flash_attention_2": "FlashAttention 2", "flash_attention_3": "FlashAttention 3",
         "flex_attention": "FlexAttention"}


def attention_name(profile: dict | None, lang: str) -> str:
    """"attention (RoPE, SDPA)" as this model does it (the profile's `attention`: its positions, the
    implementation it ran with, a score soft-cap); plain "attention" for a profile that did not record it."""
    kind = (profile or {}).get("attention")
    if not kind:
        return label("prof_attention_plain", lang)
    positions = kind.get("positions")
    parts = [label(f"prof_attn_{positions}", lang)] if positions in ("rope", "learned", "none") else []
    impl = kind.get("impl")
    if impl:
        parts.append(label("prof_attn_eager", lang) if impl == "eager" else IMPLS.get(impl, str(impl)))
    if kind.get("softcap"):
        parts.append(label("prof_attn_softcap", lang))
    return label("prof_op_attention", lang, how=list_sep(lang).join(parts))


def list_sep(lang: str) -> str:
    """Between the parts of a list in a name: the enumeration comma in Chinese."""
    return "、" if lang == "zh" else ", "


def _phase_title(profile: dict, phase: str, lang: str) -> str:
    p = profile["phases"][phase]
    if phase == "prefill":
        return label("prof_phase_prefill", lang, n=p["tokens"])
    return label("prof_phase_decode", lang, k=profile["decode_step"], s=p["keys"])


def _check(profile: dict | None, phase: str, lang: str) -> dict:
    if not profile or phase not in (profile.get("phases") or {}):
        raise ValueError(label("prof_none", lang))
    return profile["phases"][phase]


def _bound_name(bound: str | None, lang: str) -> str:
    return label(f"lab_bound_by_{bound}", lang) if bound else label("prof_no_bound", lang)


def _ratio_text(ratio: float | None) -> str:
    if ratio is None or not math.isfinite(ratio):
        return ""
    return f"×{ratio:,.0f}" if ratio >= 10 else f"×{ratio:.1f}"


def ops_frame(profile: dict, phase: str, lang: str) -> pd.DataFrame:
    """One row per op of the pass, in the order the pass runs them."""
    p = _check(profile, phase, lang)
    by_op = {o["op"]: o for o in p["ops"]}
    rows = []
    for op in PASS_OPS:
        o = by_op.get(op)
        if o is None or o["measured_ms"] is None:
            continue
        rows.append({"op": op_name(op, lang, profile), "measured": max(o["measured_ms"], FLOOR_MS),
                     "measured_ms": o["measured_ms"], "roofline": max(o["predicted_ms"], FLOOR_MS) if o["predicted_ms"]
                     else None, "roofline_ms": o["predicted_ms"], "ratio": o["ratio"], "ratio_text": _ratio_text(o["ratio"]),
                     "bound": _bound_name(o["bound"], lang), "layers": o["layers"],
                     "gflops": o["flops"] / 1e9, "mb": o["bytes"] / 1e6})
    return pd.DataFrame(rows)


def ops_chart(profile: dict, phase: str, lang: str = "en", height: int | None = None) -> alt.LayerChart:
    """Per op (all layers together): measured bar, roofline tick, measured ÷ roofline beside them."""
    frame = ops_frame(profile, phase, lang)
    p = profile["phases"][phase]
    order = list(frame["op"])
    y = alt.Y("op:N", sort=order, title=None, axis=alt.Axis(labelLimit=200))
    top = max(frame["measured"].max(), frame["roofline"].max()) * 4
    x_scale = alt.Scale(type="log", domain=[FLOOR_MS, top])
    decades = [10.0 ** e for e in range(-4, math.ceil(math.log10(top)) + 1)]
    tips = [alt.Tooltip("op:N", title=label("prof_op", lang)),
            alt.Tooltip("measured_ms:Q", title=label("measured", lang), format=".3f"),
            alt.Tooltip("roofline_ms:Q", title=label("prof_roofline", lang), format=".4f"),
            alt.Tooltip("ratio:Q", title=label("prof_ratio", lang), format=",.1f"),
            alt.Tooltip("bound:N", title=label("lab_limited", lang)),
            alt.Tooltip("gflops:Q", title=label("prof_gflops", lang), format=",.4f"),
            alt.Tooltip("mb:Q", title=label("prof_mb", lang), format=",.3f"),
            alt.Tooltip("layers:Q", title=label("prof_layers", lang))]
    base = alt.Chart(frame).encode(y=y, tooltip=tips)
    bars = base.mark_bar(color=BLUE, height={"band": 0.7}).encode(      # from the axis floor (a log axis has no 0)
        x=alt.X("measured:Q", scale=x_scale, title=label("prof_ms_axis", lang),
                axis=alt.Axis(values=decades, format="~g")), x2=alt.datum(FLOOR_MS))
    bounds = [label("lab_bound_by_compute", lang), label("lab_bound_by_memory", lang)]
    ticks = base.mark_tick(thickness=3, size=16).encode(
        x=alt.X("roofline:Q", scale=x_scale),
        color=alt.Color("bound:N", title=label("prof_tick_legend", lang), scale=alt.Scale(domain=bounds,
                        range=[PURPLE, ORANGE]), legend=alt.Legend(orient="top", columns=STACK_NARROW)))
    ratio = base.mark_text(align="left", dx=6, fontSize=12, color=INK).encode(x=alt.X("measured:Q", scale=x_scale),
                                                                             text="ratio_text:N")
    m = profile["machine"]
    title = alt.Title(
        label("prof_title", lang, phase=_phase_title(profile, phase, lang)),
        subtitle=wrap_lines([label("prof_sub", lang, ms=fmt_ms(p["forward_ms"]), bound=fmt_ms(p["predicted_ms"]),
                                   timed=fmt_ms(p["hooked_ms"]), repeats=profile["repeats"]),
                             label("prof_sub2", lang, bw=f"{m['bandwidth_bytes_s'] / 1e9:,.1f}",
                                   flops=f"{m['peak_flops'] / 1e9:,.0f}")], width=78))
    return alt.layer(bars, ticks, ratio, title=title).properties(width=300, height=height or alt.Step(17))


def lanes_frame(profile: dict, phase: str, lang: str) -> pd.DataFrame:
    """One row per (op, layer): the op's time in that layer, measured and by the roofline."""
    p = _check(profile, phase, lang)
    rows = [{"op": op_name(r["op"], lang, profile), "layer": r["layer"], "measured_ms": r["measured_ms"],
             "roofline_ms": r["predicted_ms"], "ratio": max(r["ratio"], 0.01) if r["ratio"] is not None else None}
            for r in p["rows"] if r["layer"] is not None and r["measured_ms"] is not None]
    return pd.DataFrame(rows)


def lanes_chart(profile: dict, phase: str, lang: str = "en") -> alt.Chart:
    """A lane per op, a cell per layer: how many times its roofline time each op took in each layer."""
    frame = lanes_frame(profile, phase, lang)
    order = [op_name(op, lang, profile) for op in PASS_OPS]
    return alt.Chart(frame, title=alt.Title(label("prof_lanes_title", lang),
                                            subtitle=wrap_lines([label("prof_lanes_sub", lang)], width=52))).mark_rect().encode(
        x=alt.X("layer:O", title=label("layer_axis", lang), axis=alt.Axis(labelAngle=0, values=list(range(0, 200, 5)))),
        y=alt.Y("op:N", sort=order, title=None, axis=alt.Axis(labelLimit=200)),
        color=alt.Color("ratio:Q", title=label("prof_ratio", lang),
                        scale=alt.Scale(type="log", scheme="oranges"), legend=alt.Legend(orient="right")),
        tooltip=[alt.Tooltip("op:N", title=label("prof_op", lang)), alt.Tooltip("layer:O", title=label("layer", lang)),
                 alt.Tooltip("measured_ms:Q", title=label("measured", lang), format=".4f"),
                 alt.Tooltip("roofline_ms:Q", title=label("prof_roofline", lang), format=".5f"),
                 alt.Tooltip("ratio:Q", title=label("prof_ratio", lang), format=",.1f")],
    ).properties(width=alt.Step(9), height=alt.Step(17))


def profile_chart(profile: dict, phase: str, lang: str = "en") -> alt.HConcatChart:
    """The pass by op, and the same pass layer by layer, side by side."""
    return alt.hconcat(ops_chart(profile, phase, lang), lanes_chart(profile, phase, lang), spacing=30)


def projection_frame(profile: dict, lang: str) -> pd.DataFrame:
    rows = profile.get("projection") or []
    if not rows:
        raise ValueError(label("prof_none", lang))
    frame = pd.DataFrame(rows)
    frame["family"] = frame["family"].map(lambda f: label(f"prof_family_{f}", lang))
    frame["phase"] = frame["phase"].map(lambda p: label("prefill" if p == "prefill" else "step_axis", lang))
    return frame


def projection_chart(profile: dict, lang: str = "en") -> alt.FacetChart:
    """Projection: each model's prefill and decode step on each GPU, split by family of ops."""
    frame = projection_frame(profile, lang)
    families = [label(f"prof_family_{f}", lang) for f in ("matmul", "attention", "other")]
    phases = [label("prefill", lang), label("step_axis", lang)]
    return alt.Chart(frame).mark_bar().encode(
        y=alt.Y("hardware:N", title=None, sort=list(dict.fromkeys(frame["hardware"]))),
        x=alt.X("predicted_ms:Q", title=label("prof_projection_axis", lang), stack="zero"),
        color=alt.Color("family:N", title=label("prof_family", lang),
                        scale=alt.Scale(domain=families, range=[BLUE, ORANGE, GREY]), legend=alt.Legend(orient="top", columns=STACK_NARROW)),
        row=alt.Row("model:N", title=None, sort=list(dict.fromkeys(frame["model"])),
                    header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold")),
        column=alt.Column("phase:N", title=None, sort=phases),
        tooltip=["model:N", "hardware:N", "family:N", alt.Tooltip("predicted_ms:Q", format=".4f")],
    ).resolve_scale(x="independent").properties(
        width=260, height=alt.Step(14), title=alt.Title(label("prof_projection_title", lang),
                                                        subtitle=[label("prof_projection_sub", lang)]))


# --- the walkthrough's view: each kind of op, how many times its bound it took --------------------
GROUPS = {"matmul": ("q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj", "gate_proj", "up_proj", "gate_up_proj",
                     "router", "experts", "down_proj"),
          "lm_head": ("lm_head",), "attention": ("attention",),
          "norms": ("input_norm", "post_norm", "qk_norm", "ffn_norm", "post_ffn_norm", "extra_norm", "final_norm"),
          "elementwise": ("act_mul", "act", "residual", "rope_tables", "embed"), "sampling": ("sampling",)}


def group_name(group: str, profile: dict | None, lang: str) -> str:
    if group == "attention":
        return attention_name(profile, lang)
    return label(f"prof_group_{group}", lang, act=activation_name(profile, lang))


def groups_frame(profile: dict | None, lang: str) -> pd.DataFrame:
    """Per kind of op and phase: measured and roofline time summed over its ops and layers."""
    rows = []
    for phase in ("prefill", "decode"):
        by_op = {o["op"]: o for o in _check(profile, phase, lang)["ops"]}
        for group, ops in GROUPS.items():
            mine = [by_op[op] for op in ops if op in by_op and by_op[op]["predicted_ms"]]
            measured, predicted = sum(o["measured_ms"] for o in mine), sum(o["predicted_ms"] for o in mine)
            if not mine or predicted <= 0:
                continue
            bound = max(mine, key=lambda o: o["predicted_ms"])["bound"]
            rows.append({"group": group_name(group, profile, lang), "phase": label(f"prof_short_{phase}", lang),
                         "measured_ms": measured, "roofline_ms": predicted, "ratio": max(measured / predicted, 0.1),
                         "ratio_text": _ratio_text(measured / predicted), "bound": _bound_name(bound, lang)})
    return pd.DataFrame(rows)


def bound_chart(profile: dict | None, lang: str = "en") -> alt.LayerChart:
    """How many times its roofline time each kind of op took, in the prefill and in a decode step."""
    frame = groups_frame(profile, lang)
    phases = list(dict.fromkeys(frame["phase"]))
    y = alt.Y("group:N", sort=list(dict.fromkeys(frame["group"])), title=None, axis=alt.Axis(labelLimit=220))
    top = 10 ** math.ceil(math.log10(max(frame["ratio"].max() * 2, 10)))
    x = alt.X("ratio:Q", scale=alt.Scale(type="log", domain=[0.5, top], nice=False), title=label("prof_ratio_axis", lang),
              axis=alt.Axis(values=[10.0 ** e for e in range(0, int(math.log10(top)) + 1)], format="~g"))
    base = alt.Chart(frame).encode(
        y=y, yOffset=alt.YOffset("phase:N", sort=phases),
        tooltip=[alt.Tooltip("group:N", title=label("prof_op", lang)), alt.Tooltip("phase:N", title=label("phase", lang)),
                 alt.Tooltip("measured_ms:Q", title=label("measured", lang), format=".3f"),
                 alt.Tooltip("roofline_ms:Q", title=label("prof_roofline", lang), format=".4f"),
                 alt.Tooltip("bound:N", title=label("lab_limited", lang))])
    bars = base.mark_bar().encode(x=x, x2=alt.datum(0.5), color=alt.Color(
        "phase:N", sort=phases, title=None, scale=alt.Scale(domain=phases, range=[ORANGE, BLUE]),
        legend=alt.Legend(orient="top", columns=STACK_NARROW)))
    text = base.mark_text(align="left", dx=4, fontSize=12, color=INK).encode(x=x, text="ratio_text:N")
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(color=INK, strokeDash=[4, 3]).encode(x=alt.X("x:Q"))
    m = profile["machine"]
    return alt.layer(bars, text, rule, title=alt.Title(
        label("prof_bound_title", lang),
        subtitle=wrap_lines([label("prof_bound_sub", lang, n=profile["phases"]["prefill"]["tokens"],
                                   k=profile["decode_step"], bw=f"{m['bandwidth_bytes_s'] / 1e9:,.1f}",
                                   flops=f"{m['peak_flops'] / 1e9:,.0f}")], width=66))
                     ).properties(width=420, height=alt.Step(13))


def summary_md(profile: dict | None, lang: str) -> str:
    """One line of the profile's reading: each pass against its bound, and the matmuls against the small ops."""
    if not profile:
        return ""
    pre, dec = profile["phases"]["prefill"], profile["phases"]["decode"]
    frame = groups_frame(profile, lang)
    decode = frame[frame["phase"] == label("prof_short_decode", lang)].set_index("group")
    ratios = decode["measured_ms"] / decode["roofline_ms"]            # unclipped (the chart's floor is 0.1)
    small = [group_name(g, profile, lang) for g in ("norms", "elementwise", "attention")]
    summary = label("prof_summary", lang, n=pre["tokens"], prefill=fmt_ms(pre["forward_ms"]),
                    prefill_x=_ratio_text(pre["forward_ms"] / pre["predicted_ms"]), decode=fmt_ms(dec["forward_ms"]),
                    decode_x=_ratio_text(dec["forward_ms"] / dec["predicted_ms"]))
    matmul = ratios.get(label("prof_group_matmul", lang))
    # near their bound, or under it (then the bandwidth measured is below what the machine reached)
    matmuls = lab_verdicts.profile_matmuls(matmul, _ratio_text(matmul), _ratio_text(min(
        (ratios[g] for g in small if g in ratios), default=None)), profile.get("machine") or {}, lang)
    # compute- or memory-bound, as this prefill's length stands to the machine's ridge point
    return ("" if lang == "zh" else " ").join(x for x in (summary, matmuls, lab_verdicts.profile_prefill(profile, lang)) if x)
