"""Hugging Face Spaces readiness: the README front matter and the GPU decorator (a start that
survives a model it cannot load: tests/app/test_host_limits.py)."""

import re

import yaml

from tests.paths import ROOT


def test_readme_front_matter_is_a_space_config():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "README must start with YAML front matter"
    meta = yaml.safe_load(match.group(1))
    for key in ("title", "emoji", "sdk", "sdk_version", "app_file", "short_description"):
        assert meta.get(key), key
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert len(meta["short_description"]) <= 60
    pinned = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert meta["sdk_version"] == pinned


def test_gpu_decorator_is_a_no_op_without_spaces():
    from ui.host.gpu import on_gpu, spaces

    def work(x):
        return x + 1
    assert spaces is None and on_gpu(work) is work


def test_zerogpu_durations_follow_the_request(monkeypatch):
    """On ZeroGPU every GPU function gets a duration from its own arguments (the default 60 s
    would kill a long run, the lab or the evaluation)."""
    import types
    from ui.host import gpu
    granted = []

    def GPU(fn=None, duration=None):
        if fn is not None:                            # used bare: the 60 s default
            granted.append(None)
            return fn

        def wrap(f):
            def call(*args, **kwargs):
                granted.append(duration(*args, **kwargs) if callable(duration) else duration)
                return f(*args, **kwargs)
            return call
        return wrap
    monkeypatch.setattr(gpu, "spaces", types.SimpleNamespace(GPU=GPU))

    def run(prompt, max_new_tokens, *rest):
        return prompt
    assert gpu.on_gpu(run, gpu.for_tokens(1))("hi", 1000) == "hi"
    assert gpu.on_gpu(run, gpu.for_tokens((1, 2)))("hi", 256, 64)
    assert gpu.on_gpu(run, 600)("hi", 1)
    assert granted == [gpu.BASE_SECONDS + 250, gpu.BASE_SECONDS + 80, 600]
    assert gpu.for_tokens(1)("hi", "not a number") > 60             # unknown: assume a long run
