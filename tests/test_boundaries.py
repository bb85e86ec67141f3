"""The shape of the code: engine/ knows no UI library; viz/ runs without torch."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_engine_imports_no_ui_library():
    assert not imported_modules(ROOT / "engine") & {"gradio", "altair", "pandas", "gradio_client"}


def test_viz_imports_no_torch():
    viz = ROOT / "viz"
    if not viz.exists():
        pytest.skip("viz/ not built yet")
    assert not imported_modules(viz) & {"torch", "transformers", "gradio"}
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None; "
            "import viz, engine.trace; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
