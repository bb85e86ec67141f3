"""The Engine: one loaded model that many runs share.

Runs interleave step by step (two streams on one page, several visitors). Each forward pass takes
the engine's lock for its own duration, and registers its hooks and switches the attention
implementation only inside it, so nothing one run sets up can fire inside another run's pass.
"""

from __future__ import annotations

import dataclasses
import threading
from contextlib import contextmanager

import torch

from .clock import now_ms
from .errors import InvalidRequest
from .hooks import Capture, final_norm, hooked
from .loading import LoadedModel, load
from .reasoning import thinking_style
from .request import Limits
from .tokens import TokenBytes, printable
from .trace import LensGuess, Settings


class Engine:
    def __init__(self, loaded: LoadedModel, limits: Limits | None = None):
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.info = loaded.info
        self.limits = limits or Limits.from_env()
        self.token_bytes = TokenBytes(self.tokenizer)
        self.device = self.model.device
        self.lock = threading.RLock()
        self._runs = 0                   # runs started and not yet finished, cancelled or closed
        self._runs_lock = threading.Lock()
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self.eos_ids = {int(e) for e in eos + [self.tokenizer.eos_token_id] if e is not None}
        self.thinking_style = thinking_style(self.tokenizer)   # switch / tags / scaffold

    @property
    def active_runs(self) -> int:
        """Runs in progress on this engine (a host's health check; tests of Stop and disconnects)."""
        return self._runs

    def _count_run(self, delta: int) -> None:
        with self._runs_lock:
            self._runs += delta

    def ensure_device(self) -> None:
        """Move the model to CUDA if CUDA appeared after loading: ZeroGPU Spaces grant a GPU only
        inside calls decorated with `spaces.GPU`, so the model is loaded on the CPU and moved here."""
        if (torch.cuda.is_available() and self.device.type != "cuda"
                and not getattr(self.model, "hf_device_map", None)):
            with self.lock:
                self.model.to("cuda")
                self.device = self.model.device
                self.info = dataclasses.replace(self.info, device=str(self.device))

    @classmethod
    def load(cls, model_id: str | None = None, limits: Limits | None = None, **kwargs) -> Engine:
        return cls(load(model_id, **kwargs), limits)

    # --- text <-> ids -------------------------------------------------------------------------
    def text_of(self, token_id: int) -> str:
        return printable(self.token_bytes.bytes_of(token_id))

    def apply_template(self, prompt: str, settings: Settings, **template_kwargs) -> str:
        if not settings.chat_template:
            return prompt
        if not self.tokenizer.chat_template:
            raise InvalidRequest("this model has no chat template; turn the chat template off")
        messages = [{"role": "user", "content": prompt}]
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                                  **template_kwargs)

    def encode(self, text: str, templated: bool) -> list[int]:
        """Token ids. A templated text already holds its special tokens; raw text gets the
        tokenizer's own (a BOS for Llama-2-style tokenizers, nothing for SmolLM2)."""
        return self.tokenizer(text, add_special_tokens=not templated)["input_ids"]

    # --- model passes -------------------------------------------------------------------------
    @contextmanager
    def attention_implementation(self, name: str | None):
        """Switch the shared model's attention kernel for the duration of one pass (lock held)."""
        before = self.model.config._attn_implementation
        switch = name is not None and name != before
        if switch:
            self.model.set_attn_implementation(name)
        try:
            yield
        finally:
            if switch:
                self.model.set_attn_implementation(before)

    def forward(self, input_ids: torch.Tensor, cache, capture: Capture) -> tuple[torch.Tensor, float]:
        """One pass; returns the last position's logits ([vocab], float32) and its wall ms.

        input_ids: [1, T] (the whole prompt at prefill, one token per decode step, or the whole
        sequence when `cache` is None and nothing is reused).
        """
        assert input_ids.dim() == 2 and input_ids.shape[0] == 1, input_ids.shape
        with self.lock, torch.inference_mode():
            with self.attention_implementation("eager" if capture.attention else None), \
                    hooked(self.model, capture):
                start = now_ms(self.device)
                out = self.model(input_ids=input_ids.to(self.device), cache=cache,
                                 use_cache=cache is not None, logits_to_keep=1)
                logits = out.logits[0, -1].float()
                ms = now_ms(self.device) - start
        return logits, ms

    def lens(self, capture: Capture) -> list[LensGuess]:
        """Logit lens: each layer's last hidden state through the final norm and the LM head."""
        hidden = torch.stack([capture.hidden[i] for i in sorted(capture.hidden)])  # [layers, hidden]
        with torch.inference_mode():
            logits = self.model.get_output_embeddings()(final_norm(self.model)(hidden)).float()
            p, ids = torch.softmax(logits, dim=-1).max(dim=-1)
        return [LensGuess(layer=i, id=int(t), text=self.text_of(int(t)), p=float(q))
                for i, (t, q) in enumerate(zip(ids.tolist(), p.tolist()))]
