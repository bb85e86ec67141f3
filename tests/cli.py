"""`python -m engine ...` in this process, on the session's engine: each command a newcomer runs in a
child would load the model again (about 13 loads in a `make test`). Argument parsing, the command's
code, what it prints and its exit code are the child's; only the load is the session's engine.
tests/engine/test_engine_cli.py keeps one real `python -m engine` child (the entry point itself)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Done:
    """What subprocess.run would give: the exit code and the two streams."""
    returncode: int
    stdout: str
    stderr: str


def run_here(engine, monkeypatch, capsys, *args: str) -> Done:
    """`python -m engine ARGS` through engine.cli.main, with Engine.load handing out `engine` for the
    embedded model on its own device and dtype (any other load fails the test: it would be a second model)."""
    from engine import cli
    from engine.model.core import Engine

    def load(cls, model_id=None, limits=None, device=None, dtype="auto", attn_implementation="sdpa", **kwargs):
        embedded = model_id in (None, "embedded")
        same_device = device is None or str(device) == engine.device.type
        if embedded and same_device and dtype in (None, "auto") and attn_implementation == "sdpa" and not kwargs:
            return engine
        raise AssertionError(f"a second model load in-process: {model_id!r} {device!r} {dtype!r} {kwargs}")
    monkeypatch.setattr(Engine, "load", classmethod(load))
    capsys.readouterr()                       # what the test printed before is not the command's
    try:
        code = cli.main(list(args))
    except SystemExit as exc:                 # argparse's refusals
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return Done(code, out.out, out.err)
