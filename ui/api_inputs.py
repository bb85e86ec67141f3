"""Inputs of the documented API (/trace, /compare) that answer a wrong value with a message.

Gradio hides its own conversion errors from callers when `show_error` is off (as it is here, so
that no internal error text reaches a visitor): a string or NaN sent for a slider would come back
as a bare "error". These inputs check only the type; ranges and finiteness are left to the engine,
whose messages name the setting and its allowed range.
"""

from __future__ import annotations

import gradio as gr


class _SameLook:
    """Drawn by the parent component's frontend (Gradio looks it up by class name). Construct with
    keywords only (label=..., visible=False): Gradio reads a component's props from its __init__."""

    def get_block_name(self) -> str:
        return type(self).__mro__[2].__name__.lower()


class ApiNumber(_SameLook, gr.Number):
    def preprocess(self, payload):
        if payload is None:
            return None
        if isinstance(payload, bool) or not isinstance(payload, (int, float)):
            raise gr.Error(f"{self.label} must be a number, got {str(payload)[:40]!r}")
        return payload


class ApiFlag(_SameLook, gr.Checkbox):
    def preprocess(self, payload):
        if not isinstance(payload, bool):
            raise gr.Error(f"{self.label} must be true or false, got {str(payload)[:40]!r}")
        return payload


class ApiText(_SameLook, gr.Textbox):
    def preprocess(self, payload):
        if payload is not None and not isinstance(payload, str):
            raise gr.Error(f"{self.label} must be text, got {type(payload).__name__}")
        return payload


def api_inputs(kind, *names: str, **defaults) -> list:
    """Hidden inputs of one kind for the API arguments `names` (required) and `defaults` (optional:
    a caller may leave them out). Their labels name them in errors."""
    return ([kind(label=name, visible=False) for name in names]
            + [kind(label=name, value=value, visible=False) for name, value in defaults.items()])
