"""The Engine: one loaded model that many runs share.

Runs interleave step by step (two streams on one page, several visitors). Each forward pass takes
the engine's lock for its own duration, and registers its hooks only inside it, so nothing one run
sets up can fire inside another run's pass. Attention is captured by our SDPA wrapper
(engine/model/attention.py), which the model uses for every pass, watched or not: capturing never
switches the kernel that computes the output.
"""

from __future__ import annotations

import dataclasses
import threading
from contextlib import contextmanager

import torch

from engine.model import attention
from engine.model.clock import now_ms
from engine.host.house import HOUSE
from engine.errors import InvalidRequest
from engine.model.hooks import Capture, hooked
from engine.model.loading import LoadedModel, load
from engine.run.prefixes import Prefixes
from engine.run.reasoning import thinking_style
from engine.environment import Limits
from engine.model.tokens import TokenBytes, printable
from engine.schema.trace import Settings


@contextmanager
def switched_kernel(model, name: str | None):
    """Run `model` with the attention implementation `name` ("eager", "sdpa", ...; None: as it is),
    then put back the one it had. It mutates the model (a switch walks every layer): on the shared
    model, only under the engine's lock."""
    before = model.config._attn_implementation
    if name is not None and name != before:
        model.set_attn_implementation(name)
    try:
        yield
    finally:
        if model.config._attn_implementation != before:
            model.set_attn_implementation(before)


class Engine:
    def __init__(self, loaded: LoadedModel, limits: Limits | None = None):
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.info = loaded.info
        self.limits = limits or Limits.from_env()
        self.token_bytes = TokenBytes(self.tokenizer)
        self.device = self.model.device
        self.lock = threading.RLock()
        self.prefixes = Prefixes(self.limits.prefix_cache_bytes)   # finished runs' caches, for forking
        self.held_for: str | None = None  # why the engine is held exclusively (a lab timing), else None
        self._runs = 0                   # runs started and not yet finished, cancelled or closed
        self._runs_lock = threading.Lock()
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self.eos_ids = {int(e) for e in eos + [self.tokenizer.eos_token_id] if e is not None}
        self.thinking_style = thinking_style(self.tokenizer)   # switch / tags / scaffold
        self.capture_via = self._install_capture()             # "sdpa-capture" | "eager-hooks"
        self.fast = None           # engine/compiled/fast.FastPath once `start_fast` is called, else eager only
        self.fast_refusal = None   # why the compiled step is not for this model (engine/compiled/fit.py), once asked
        self.embedding_norms: torch.Tensor | None = None   # engine/model/embeddings.py, computed on first use

    def _install_capture(self) -> str:
        """Route an SDPA model's attention through our capturing SDPA wrapper, and check with one
        tiny pass that every layer really calls it. A model that keeps another kernel (eager,
        FlashAttention) or whose attention bypasses transformers' interface is watched the old
        way: its watched passes switch to eager and read the weights from hooks."""
        before = self.model.config._attn_implementation
        if before != "sdpa":
            return "eager-hooks"
        attention.register()
        self.model.set_attn_implementation(attention.NAME)
        probe = Capture(attention=True)
        with torch.inference_mode():
            self.model(input_ids=torch.tensor([[0, 0]], device=self.device), use_cache=False,
                       logits_to_keep=1, **{attention.KWARG: probe})
        if probe.calls != self.info.layers:
            self.model.set_attn_implementation(before)
            return "eager-hooks"
        return "sdpa-capture"

    def start_fast(self, wait: bool = False):
        """Turn on the compiled decode path (engine/compiled/fast.py): build its package now in this process
        (`wait`), or in the back room and load it when it is ready (the app). Only for a model on one
        device that runs our attention function (the compiled step has its own); otherwise the
        engine stays eager and this returns None."""
        from engine.compiled.fast import FastPath
        from engine.compiled.fit import refusal
        self.fast_refusal = refusal(self)       # why the step is not for this model (engine/compiled/fit.py)
        if self.fast_refusal is not None:
            return None
        with self.lock:
            if self.fast is None or self.fast.device != self.device:
                self.fast = FastPath(self.model, self.device, self.info.id)
        for bucket in self.fast.buckets_for(self.info.context_length):
            if wait:
                self.fast.compile_now("watch", bucket)
            else:
                self.fast.build_in_background(bucket)
        return self.fast

    def kernel(self, capture: Capture) -> str:
        """The attention kernel that computes the outputs of a pass that captures like `capture`."""
        return "eager" if capture.attention and self.capture_via == "eager-hooks" else self.info.attn_implementation

    @property
    def active_runs(self) -> int:
        """Runs in progress on this engine (a host's health check; tests of Stop and disconnects)."""
        return self._runs

    def _count_run(self, delta: int) -> None:
        """A run begins (+1) or ends (-1): the house's heavy work stands still while any runs
        (engine/host/house.py)."""
        with self._runs_lock:
            self._runs += delta
        if delta > 0:
            HOUSE.run_begins()
        else:
            HOUSE.run_ends()

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

    @contextmanager
    def exclusive(self, reason: str):
        """Hold the engine for a whole measurement (the lab's timings): other runs wait at their
        next forward pass, and `held_for` tells their pages why they wait."""
        with self.lock:
            self.held_for = reason
            try:
                yield
            finally:
                self.held_for = None

    # --- text <-> ids -------------------------------------------------------------------------
    def text_of(self, token_id: int) -> str:
        return printable(self.token_bytes.bytes_of(token_id))

    def apply_template(self, prompt: str, settings: Settings, **template_kwargs) -> str:
        if not settings.chat_template:
            return prompt
        if not self.tokenizer.chat_template:
            raise InvalidRequest("this model has no chat template; turn the chat template off", "no_chat_template")
        messages = [{"role": "user", "content": prompt}]
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                                  **template_kwargs)

    def encode(self, text: str, templated: bool) -> list[int]:
        """Token ids. A templated text already holds its special tokens; raw text gets the
        tokenizer's own (a BOS for Llama-2-style tokenizers, nothing for SmolLM2)."""
        return self.tokenizer(text, add_special_tokens=not templated)["input_ids"]

    # --- model passes -------------------------------------------------------------------------
    def forward(self, input_ids: torch.Tensor, cache, capture: Capture) -> Pass:
        """One pass: the last position's logits ([vocab], float32) and where its time went.

        input_ids: [1, T] (the whole prompt at prefill, one token per decode step, or the whole
        sequence when `cache` is None and nothing is reused).
        """
        assert input_ids.dim() == 2 and input_ids.shape[0] == 1, input_ids.shape
        # time spent waiting here for the lock (another run's pass, the lab) or for a back-room job's
        # turn (engine/host/house.py) is not measured apart: the run counts it in the step's wait_ms,
        # the rest of its wall time once model and watching are out
        with self.lock, HOUSE.visitor_pass(), torch.inference_mode():
            eager = capture.attention and self.capture_via == "eager-hooks"
            extra = {attention.KWARG: capture} if capture.attention and not eager else {}
            with switched_kernel(self.model, "eager" if eager else None), \
                    hooked(self.model, capture, eager_attention=eager):
                start = now_ms(self.device)
                out = self.model(input_ids=input_ids.to(self.device), cache=cache,
                                 use_cache=cache is not None, logits_to_keep=1, **extra)
                logits = out.logits[0, -1].float()
                ms = now_ms(self.device) - start
                inside = capture.inside_ms              # capture work done within the pass
                if capture.pending:                     # decode rows scored in one batch, after the pass
                    attention.finish(capture)
                    capture.inside_ms += now_ms(self.device) - start - ms
        return Pass(logits=logits, ms=ms - inside, capture_ms=capture.inside_ms)


@dataclasses.dataclass
class Pass:
    """One forward pass: its logits and where its wall time went."""
    logits: torch.Tensor       # [vocab] float32, the last position
    ms: float                  # the model's own work (the capture inside the pass taken out)
    capture_ms: float          # attention capture done inside and right after the pass
