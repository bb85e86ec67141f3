"""Host settings: every TBT_* variable is read in engine/environment.py, and a bad value falls back."""

import re
import subprocess
import sys
from pathlib import Path

from engine import environment
from engine.environment import Limits

ROOT = Path(__file__).resolve().parents[2]


def test_a_bad_number_falls_back_to_its_default(monkeypatch):
    monkeypatch.setenv("TBT_CONCURRENCY", "two")
    monkeypatch.setenv("TBT_MAX_PROMPT_CHARS", "1e3")
    monkeypatch.setenv("TBT_SLO_TTFT_MS", "fast")
    assert environment.concurrency() == 2
    assert Limits.from_env().max_prompt_chars == Limits.max_prompt_chars
    assert environment.slo_ms()[0] == 1000.0
    monkeypatch.setenv("TBT_MAX_PROMPT_CHARS", " 200 ")
    assert Limits.from_env().max_prompt_chars == 200


def test_the_compiled_path_s_kind_falls_back_to_the_device_s(monkeypatch, caplog):
    monkeypatch.setenv("TBT_FAST_KIND", "cudagraph")
    assert environment.fast_kind("cuda") == "graph" and environment.fast_kind("cpu") == "aoti"
    assert "TBT_FAST_KIND" in caplog.text
    monkeypatch.setenv("TBT_FAST_KIND", " graph ")
    assert environment.fast_kind("cpu") == "graph"


def test_switches_and_lists(monkeypatch):
    for raw, on in (("", True), ("0", False), ("off", False), ("No", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("TBT_COMPILE", raw)
        assert environment.compile_enabled() is on, raw
    monkeypatch.setenv("TBT_MODELS", " embedded , org/model ,,")
    assert environment.models() == ["embedded", "org/model"]


def test_the_server_modules_import_with_bad_values():
    """ui/host/runs.py used to crash at import on a bad TBT_CONCURRENCY."""
    env = {"PATH": "/usr/bin:/bin", "TBT_CONCURRENCY": "x", "TBT_MAX_MODELS": "many", "TBT_LAB_SECONDS": "?"}
    done = subprocess.run([sys.executable, "-c", "import ui.host.runs, ui.host.models; print(ui.host.runs.ENGINE_CONCURRENCY)"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "2"


def test_no_tbt_variable_is_read_outside_the_environment_module():
    readers = []
    for folder in ("engine", "ui", "viz"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            if path.name != "environment.py" and re.search(r"environ(\.get)?[\[(]\s*[\"']TBT_", text):
                readers.append(str(path.relative_to(ROOT)))
    app = (ROOT / "app.py").read_text()
    assert not re.search(r"environ(\.get)?[\[(]\s*[\"']TBT_", app)
    assert not readers, readers


def test_the_command_lines_model_and_the_hosts_list(monkeypatch, caplog):
    """`python app.py --model X` offers X alone; with TBT_MODELS set, X is the default if listed, and
    a model the list does not name is said in the log instead of being dropped without a word."""
    from engine.schema.specs import EMBEDDED
    from ui.host.models import allowed_from_env
    monkeypatch.delenv("TBT_MODELS", raising=False)
    assert allowed_from_env("org/x") == ["org/x"] and allowed_from_env() == [EMBEDDED]
    monkeypatch.setenv("TBT_MODELS", "embedded,org/x")
    assert allowed_from_env() == [EMBEDDED, "org/x"]
    assert allowed_from_env("org/x") == ["org/x", EMBEDDED]
    assert allowed_from_env("org/y") == [EMBEDDED, "org/x"]
    assert "org/y" in caplog.text and "TBT_MODELS" in caplog.text
