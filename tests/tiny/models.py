"""The tiny models of the test tier: built by engine/matrix/tiny.py, once per test session.

`tiny_model(arch, template="scaffold")` -> the folder (a local model path the engine's loader and
TBT_MODELS accept); `tiny_engine(arch, template="scaffold")` -> an Engine on it, loaded once.
ARCHS names transformers' model types: llama, qwen2, qwen3, qwen3_moe, mistral, gemma2, gemma3_text,
phi3, gpt2, gpt_neox, olmo2, smollm3, granite. Templates: scaffold (SmolLM2's), switch (Qwen3's
`enable_thinking`), tags (R1-distill's opening <think>).
"""

from __future__ import annotations

import threading
from pathlib import Path

from engine.matrix.templates import TEMPLATES
from engine.matrix.tiny import ARCHS, SLIDING_ARCHS, build

__all__ = ["ARCHS", "SLIDING_ARCHS", "TEMPLATES", "TinyModels", "TinyEngines"]


class TinyModels:
    """Builds each (arch, template) once under `root` and hands back its folder."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.lock = threading.Lock()

    def __call__(self, arch: str, template: str = "scaffold") -> Path:
        with self.lock:
            return build(arch, template, self.root)


class TinyEngines:
    """One Engine per (arch, template), loaded on first use and kept for the session."""

    def __init__(self, models: TinyModels):
        self.models = models
        self.loaded: dict = {}

    def __call__(self, arch: str, template: str = "scaffold"):
        key = (arch, template)
        if key not in self.loaded:
            from engine import Engine
            self.loaded[key] = Engine.load(str(self.models(arch, template)), device="cpu", dtype="float32")
        return self.loaded[key]
