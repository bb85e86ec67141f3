"""The compiled step's verdict: is its package worth keeping? (engine/compiled/aoti.py builds it.)

A loaded package costs ~0.75 GB of RSS and ~0.66 GB of disk. It is kept only where its step is at
least PAYS times faster than eager's with the same greedy tokens; otherwise it is deleted and its
sidecar alone stays, saying why, so the host decodes eagerly and no restart builds it again for
the same key. Every settled build prunes the older packages of the same model.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine import environment

PAYS = 1.15                 # TBT_COMPILE_PAYS default: eager over compiled step time, at least


def pays() -> float:
    """TBT_COMPILE_PAYS, else PAYS (the engine's tests of the path itself set 0: kept whatever its speed)."""
    return environment.compile_pays()


def model_tag(model) -> str:
    """The model a package is of (its name and dtype): older packages of the same tag are pruned."""
    return f"{model.config._name_or_path}:{model.dtype}"


def verdict(check: dict) -> tuple[bool, str]:
    """(use it?, why not) from a comparison's figures."""
    if not check.get("same_tokens"):
        return False, "its greedy tokens differ from eager's"
    ratio = check.get("ratio")
    if ratio is None and check.get("compiled_ms"):          # a sidecar from before ratios were written
        ratio = check["eager_ms"] / check["compiled_ms"]
    ratio, needed = ratio or 0.0, pays()
    if ratio < needed:
        return False, (f"its step ({check.get('compiled_ms')} ms) is {ratio:.2f}x eager's ({check.get('eager_ms')} ms), "
                       f"under the {needed}x that pays for its memory")
    return True, ""


def settle(path: Path, meta: dict) -> dict:
    """Write the sidecar with the verdict; a package that does not pay is deleted (the sidecar stays,
    with why), and the older packages of the same model are pruned."""
    use, why = verdict(meta)
    # a verdict against the package timed on a busy machine is not final: the package stays on disk
    # (not loaded: no memory) and the next start times it again; a quiet machine's verdict is final
    final = use or not meta.get("same_tokens") or meta.get("quiet", True)
    meta = {**meta, "use": use, "why": why, "pays_at": pays(), "final": bool(final)}
    if not final:
        meta["why"] = f"{why}; timed on a busy machine ({meta.get('load_average')} load): timed again at the next start"
    elif not use:
        path.unlink(missing_ok=True)
        meta["bytes"] = 0
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    prune(path, meta.get("model"))
    return meta


def prune(keep: Path, model: str | None) -> list[str]:
    """Delete the other packages (and their sidecars) of `model` in `keep`'s folder, and any package
    whose sidecar names no model (written before packages named theirs: an older key). Returns what went."""
    gone = []
    for other in keep.parent.glob("step-*.pt2"):
        if other.name == keep.name or ".partial." in other.name:
            continue
        meta = read_meta(other) or {}
        if meta.get("model") in (model, None):
            other.unlink(missing_ok=True)
            other.with_suffix(".json").unlink(missing_ok=True)
            gone.append(other.name)
    return gone


def read_meta(path: Path) -> dict | None:
    try:
        return json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
