"""The matrix as a command (`python -m engine models --matrix`): every cell of two architectures that
differ where it matters (GPT-2: Conv1D, learned positions; GPT-NeoX: fused QKV, parallel residual, an
attention the paged cache cannot run) is ✓ or a refusal, never an internal error."""

import json
import subprocess
import sys

import pytest

from engine.matrix.measure import CELLS
from tests.paths import ROOT


@pytest.mark.numerics            # its trace and fork cells hold the engine's tokens to model.generate's
def test_the_matrix_command_has_no_internal_error():
    done = subprocess.run([sys.executable, "-m", "engine", "models", "--matrix", "--json", "--arch", "gpt2,gpt_neox"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    result = result.get("matrix", result)
    for arch in ("gpt2", "gpt_neox"):
        row = result[arch]
        assert set(CELLS) <= set(row), (arch, row)
        assert all(row[c].startswith(("✓", "refused: ")) for c in CELLS), (arch, row)
    assert result["gpt2"]["floor"] == "✓"
    assert result["gpt_neox"]["floor"].startswith("refused: The serving floor cannot run GPTNeoXForCausalLM")
