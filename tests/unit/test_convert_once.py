"""The embedded model is converted once however many processes start at once (engine/model/loading.py):
the first takes the file lock and converts, the others wait for it and read its folder. Threads stand in
for the processes here: the lock is a file lock either way."""

import threading
import time

import pytest

from engine.model import loading


def test_starts_at_once_convert_the_embedded_model_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path))
    calls = []

    def slow_convert(gguf, target):       # stands in for the ~20 s dequantization
        calls.append(target)
        time.sleep(0.5)
        target.mkdir(parents=True)
        (target / "model.safetensors").write_bytes(b"x")

    monkeypatch.setattr(loading, "convert", slow_convert)
    found = []
    starters = [threading.Thread(target=lambda: found.append(loading.converted_embedded())) for _ in range(3)]
    for t in starters:
        t.start()
    for t in starters:
        t.join(timeout=30)
    assert len(calls) == 1 and len(found) == 3 and len(set(found)) == 1
    assert (found[0] / "model.safetensors").read_bytes() == b"x"


def test_a_conversion_that_never_ends_is_a_clear_error_not_a_hang(tmp_path, monkeypatch):
    from filelock import FileLock

    from engine.errors import ModelLoadError
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(loading, "CONVERT_WAIT_S", 0.2)
    held = f"{loading.converted_folder(loading.embedded_gguf())}.lock"
    # another process, converting forever (a lock object of its own: flock keys on the open file, so
    # this thread's second object waits for it as another process would)
    with FileLock(held), pytest.raises(ModelLoadError, match="the embedded model's conversion"):
        loading.converted_embedded()
