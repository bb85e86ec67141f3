"""engine/compiled/verdict.py: the compiled step's package stays only where it pays (>= PAYS with the
same tokens); otherwise it is deleted, its sidecar says why, and older packages of the model go."""

import json

from engine.compiled.verdict import PAYS, prune, read_meta, settle, verdict


def package(folder, name, meta=None):
    path = folder / f"{name}.pt2"
    path.write_bytes(b"x" * 100)
    if meta is not None:
        path.with_suffix(".json").write_text(json.dumps(meta), encoding="utf-8")
    return path


def test_the_verdict_follows_the_ratio_and_the_tokens():
    assert verdict({"same_tokens": True, "ratio": 2.16, "eager_ms": 54, "compiled_ms": 25}) == (True, "")
    use, why = verdict({"same_tokens": True, "ratio": 1.03, "eager_ms": 36.9, "compiled_ms": 35.9})
    assert not use and "1.03x" in why and f"{PAYS}x" in why and "35.9 ms" in why
    assert verdict({"same_tokens": False, "ratio": 3.0})[0] is False
    # a sidecar written before ratios were: from its two times
    assert verdict({"same_tokens": True, "eager_ms": 46.9, "compiled_ms": 43.3})[0] is False


def test_a_package_that_does_not_pay_is_deleted_and_its_sidecar_says_why(tmp_path):
    path = package(tmp_path, "step-512-new")
    meta = settle(path, {"model": "m:float32", "same_tokens": True, "ratio": 1.02, "eager_ms": 36.9,
                         "compiled_ms": 36.2, "bytes": 100})
    assert not path.exists() and not meta["use"] and meta["bytes"] == 0
    assert read_meta(path)["why"] == meta["why"] and "1.02x" in meta["why"]


def test_a_package_that_pays_stays_and_the_model_s_older_ones_go(tmp_path):
    older = package(tmp_path, "step-512-old", {"model": "m:float32", "use": True})
    unnamed = package(tmp_path, "step-512-older")                    # from before sidecars named models
    other = package(tmp_path, "step-512-other", {"model": "someone/else:float32", "use": True})
    path = package(tmp_path, "step-512-new")
    meta = settle(path, {"model": "m:float32", "same_tokens": True, "ratio": 2.2, "eager_ms": 55, "compiled_ms": 25})
    assert meta["use"] and path.exists()
    assert not older.exists() and not older.with_suffix(".json").exists() and not unnamed.exists()
    assert other.exists()                                            # another model's package stays
    assert prune(path, "m:float32") == []


def test_a_verdict_timed_on_a_busy_machine_keeps_the_package_for_another_timing(tmp_path):
    path = package(tmp_path, "step-512-new")
    meta = settle(path, {"model": "m:float32", "same_tokens": True, "ratio": 0.9, "eager_ms": 40, "compiled_ms": 44,
                         "quiet": False, "load_average": 9.5})
    assert path.exists() and not meta["use"] and meta["final"] is False and "busy" in meta["why"]


def test_the_page_says_why_it_decodes_eagerly_in_its_language():
    from types import SimpleNamespace

    from ui.chapters.run import compiled_md
    not_paying = SimpleNamespace(fast=SimpleNamespace(built={512: {
        "same_tokens": True, "ratio": 1.027, "pays_at": 1.15, "why": "its step (35.9 ms) is 1.03x eager's"}}))
    en, zh = compiled_md(not_paying, "en"), compiled_md(not_paying, "zh")
    assert "1.03×" in en and "1.15×" in en and "eager" in en
    assert "1.03 倍" in zh and "1.15 倍" in zh and "eager" not in zh
    paying = SimpleNamespace(fast=SimpleNamespace(built={512: {"same_tokens": True, "ratio": 2.16, "pays_at": 1.15,
                                                               "why": ""}}))
    assert compiled_md(paying, "en") is None and compiled_md(SimpleNamespace(fast=None), "zh") is None


def test_the_quiet_window_waits_only_as_long_as_it_is_told(monkeypatch):
    """engine/compiled/check.py: on a busy machine a round waits QUIET_WAIT_S for a quiet window, then
    is timed anyway and called not quiet; with no wait (the tests) it sleeps not at all."""
    from engine.compiled import check
    slept = []
    monkeypatch.setattr(check.time, "sleep", slept.append)
    monkeypatch.setattr(check.os, "cpu_count", lambda: 2)
    clock = iter(range(0, 1000))
    monkeypatch.setattr(check.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(check.os, "getloadavg", lambda: (2.0, 2.0, 2.0))        # busy: load == cores
    monkeypatch.setattr(check, "QUIET_WAIT_S", 0.0)
    assert check._quiet() is False and slept == []
    monkeypatch.setattr(check, "QUIET_WAIT_S", 5.0)
    assert check._quiet() is False and 0 < len(slept) <= 6
    slept.clear()
    monkeypatch.setattr(check.os, "getloadavg", lambda: (1.2, 2.0, 2.0))        # quiet: at once
    assert check._quiet() is True and slept == []
