"""Which of one step's candidates survive each sampling stage, as HTML (beside the playground chart)."""

from __future__ import annotations

from viz.fmt import esc, fmt_p, visible
from viz.frames import rows_frame
from viz.text.labels import label
from viz.charts.sampling import REQUIRED


def survivors_html(rows: list[dict], settings: dict, lang: str = "en") -> str:
    """Which candidates survive each stage, and how much probability the shown ones hold."""
    frame = rows_frame(rows, REQUIRED, lang)
    n = len(frame)
    off = label("surv_off", lang)
    top_k, top_p = settings.get("top_k") or 0, settings.get("top_p", 1.0)
    temperature = settings.get("temperature", 1.0)
    kept_k = frame[frame["kept_top_k"].astype(bool)]
    kept_p = kept_k[kept_k["kept_top_p"].astype(bool)]
    stages = [
        (f"{label('stage_temperature', lang)} ({temperature})", n, frame["p_temperature"].sum()),
        (f"{label('stage_top_k', lang)} ({top_k or off})", len(kept_k), kept_k["p_temperature"].sum()),
        (f"{label('stage_top_p', lang)} ({top_p if top_p < 1 else off})", len(kept_p),
         kept_p["p_top_k"].sum()),
    ]
    lines = "".join(f"<li>{esc(label('surv_stage', lang, stage=name, kept=k, n=n, p=fmt_p(p)))}</li>"
                    for name, k, p in stages)
    chips = []
    for _, row in frame.iterrows():
        status = ("tbt-kept" if row.kept_top_k and row.kept_top_p else
                  "tbt-removed-k" if not row.kept_top_k else "tbt-removed-p")
        chosen = " tbt-chosen" if row.chosen else ""
        chips.append(f'<span class="tbt-surv {status}{chosen}" title="{esc(row.text)}">'
                     f'{esc(visible(str(row.text)))}<small>{esc(fmt_p(row.p_top_p))}</small></span>')
    # p_model_true (when given) is the model's real probability; p_model may be renormalised
    true_p = frame["p_model_true"] if "p_model_true" in frame.columns else frame["p_model"]
    cover = label("surv_cover", lang, n=n, p=fmt_p(true_p.sum()))
    legend = "".join(f'<span class="tbt-surv {cls}">{esc(label(key, lang))}</span>' for cls, key in (
        ("tbt-removed-k", "surv_removed_k"), ("tbt-removed-p", "surv_removed_p"),
        ("tbt-kept tbt-chosen", "sampled")))
    return (f'<div class="tbt tbt-survivors"><p>{esc(cover)}</p><ul>{lines}</ul>'
            f'<div class="tbt-surv-chips">{"".join(chips)}</div>'
            f'<div class="tbt-legend">{legend}</div>{real_run_html(settings.get("real"), n, lang)}</div>')


def real_run_html(real: dict | None, shown: int, lang: str) -> str:
    """Beside the playground (which cuts among the stored top candidates, renormalised): what the
    real run's sampling kept at this step, over the model's whole vocabulary."""
    if not real:
        return ""
    if real.get("forced"):
        text = label("real_forced", lang)
    elif real.get("kept") is None:
        text = label("real_greedy", lang, n=shown)
    else:
        text = label("real_kept", lang, t=real["temperature"], k=real["top_k"] or label("surv_off", lang),
                     p=real["top_p"] if real["top_p"] < 1 else label("surv_off", lang), kept=f"{real['kept']:,}",
                     vocab=f"{real['vocab']:,}", mass=fmt_p(real["mass"]), n=shown)
    return f'<p class="tbt-real-run">{esc(text)}</p>'
