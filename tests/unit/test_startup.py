"""The page comes first: app.py builds and serves it before torch, transformers and the weights load
(what made the page answer in 9-14 s, not ~4)."""

import os
import subprocess
import sys

from tests.paths import ROOT


BUILD_WITHOUT_THE_MODEL = """
import sys
import app
from ui.host.models import Models, allowed_from_env
app.build(Models(allowed_from_env(), load=False), [])
heavy = sorted(m for m in ("torch", "transformers", "safetensors", "tiktoken") if m in sys.modules)
print("loaded:", heavy)
sys.exit(1 if heavy else 0)
"""


def test_the_page_is_built_without_torch_or_transformers():
    """An import of the engine's torch side at a module's top (ui/, viz/, the engine's pure modules)
    would put seconds back before the page answers."""
    env = {**os.environ, "TBT_COMPILE": "0"}
    done = subprocess.run([sys.executable, "-c", BUILD_WITHOUT_THE_MODEL], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
