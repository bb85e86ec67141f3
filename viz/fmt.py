"""Small formatters shared by charts and HTML: times, sizes, probabilities, visible whitespace.

Every number a learner reads goes through one of these, so the same quantity always looks the same
on every panel (e.g. "85.4 ms", "2.11 MiB", "22.3%").
"""

from __future__ import annotations

import html
import math
import re

from viz.text.labels import label

DASH = "—"  # shown where a value was not measured (yet)

# Whitespace a token may hold, drawn as a visible sign so "␣world" and "world" can be told apart.
WHITESPACE_SIGNS = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
# The engine's printable form of a partial character: its bytes in hex, e.g. "<E4 BB>".
HEX_FRAGMENT = re.compile(r"<[0-9A-F]{2}(?: [0-9A-F]{2})*>")


def fmt_ms(ms: float | None) -> str:
    """A duration in milliseconds: "0.42 ms", "85.4 ms", "806 ms", "2.19 s"."""
    if ms is None or not math.isfinite(ms):
        return DASH
    if ms < 10:
        return f"{ms:.2f} ms"
    if ms < 100:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


def fmt_bytes(n: float | None) -> str:
    """A size with binary units: "512 B", "45.0 KiB", "2.11 MiB", "1.50 GiB"."""
    if n is None or not math.isfinite(n):
        return DASH
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            break
        value /= 1024
    if unit == "B":
        return f"{value:.0f} B"
    return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"


def bytes_unit(largest: float) -> tuple[str, int]:
    """The binary unit (name, divisor) that keeps values up to `largest` readable on an axis."""
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if largest >= 1024 ** power:
            return unit, 1024 ** power
    return "B", 1


def fmt_p(p: float | None) -> str:
    """A probability as a percentage with three significant digits: "22.3%", "0.0326%"."""
    if p is None or not math.isfinite(p):
        return DASH
    if p <= 0:
        return "0%"
    return f"{p * 100:.3g}%"


def fmt_rate(per_s: float | None, lang: str = "en") -> str:
    """Tokens per second: "9.93 tok/s", "267 tok/s" ("9.93 token/秒" on the zh page)."""
    if per_s is None or not math.isfinite(per_s):
        return DASH
    return label("unit_rate", lang, x=f"{per_s:.3g}" if per_s < 1000 else f"{per_s:,.0f}")


def fmt_nats(x: float | None, lang: str = "en") -> str:
    return DASH if x is None or not math.isfinite(x) else label("unit_nats", lang, x=f"{x:.3f}")


def device_name(device: str) -> str:
    """A torch device as people name it: "cpu" -> "CPU", "cuda:0" -> "GPU (cuda:0)"."""
    device = str(device)
    if device == "cpu":
        return "CPU"
    return f"GPU ({device})" if device.startswith(("cuda", "mps")) else device


def visible(text: str) -> str:
    """The text with whitespace drawn as signs and other control characters as \\xNN; "∅" if empty."""
    if text == "":
        return "∅"
    if HEX_FRAGMENT.fullmatch(text):
        return text  # the space inside "<E4 BB>" separates bytes; it is not part of the text
    out = []
    for ch in text:
        if ch in WHITESPACE_SIGNS:
            out.append(WHITESPACE_SIGNS[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def short(text: str, limit: int = 14) -> str:
    """`text` cut to `limit` characters with an ellipsis, for axis labels."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def esc(text: object) -> str:
    """HTML-escape anything for text or a quoted attribute value."""
    return html.escape(str(text), quote=True)


def wrap_lines(lines: list[str], width: int = 64) -> list[str]:
    """Chart subtitle lines wrapped to about `width` columns (a CJK character counts two), so a
    long reading does not push the chart wider than its frame."""
    wide = "\u3000-\u9fff\uff00-\uffef"               # CJK characters and full-width punctuation
    out: list[str] = []
    for line in lines:
        current, used = "", 0
        for piece in re.findall(rf"[{wide}]|[^\s{wide}]+\s*|\s+", line):
            size = 2 if re.fullmatch(rf"[{wide}]", piece) else len(piece)
            if used + size > width and current.strip():
                out.append(current.rstrip())
                current, used = "", 0
            current += piece
            used += size
        if current.strip():
            out.append(current.rstrip())
    return out
