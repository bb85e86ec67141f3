"""One run, in the phases of inference: tokenize -> prefill -> decode one token at a time.

`stream_trace` checks the request at once (raising InvalidRequest before any model work) and
returns a generator that yields an Event after tokenization, after prefill and after every decode
step, and finally returns the finished Trace. The Trace inside each event is the live object
being filled in, so a consumer that stops early still holds everything measured so far.

Honest clocks: every step's wall time is split three ways and nothing of one step is charged to
the next. The model's own time (the forward pass and the sampling: what an unwatched run pays)
drives TTFT, TPOT and tokens/s; watching (attention capture, logit lens, candidates, packing) and
waiting (another run's pass, the lab, a reader that pauses the generator) are stored apart.
"""

from __future__ import annotations

import threading
from typing import Generator

import torch
from transformers import DynamicCache

from engine.compiled.fast import to_dynamic
from engine.model.clock import now_ms
from engine.model.core import Engine, Pass
from engine.model.hooks import Capture
from engine.model.lens import KeptStates
from engine.model.tokens import TextStream
from engine.run.compiled_steps import CompiledSteps
from engine.run.kv_cache import cache_bytes, cache_tokens
from engine.run.prefixes import cache_key
from engine.run.reasoning import Thinking, template_text
from engine.run.record import AttentionRows, Clocks, Event, Seen, last_of, make_step, ms3, new_trace, summarize
from engine.run.request import check_length, check_settings, clean_prompt
from engine.run.sampling import describe, pick, warpers
from engine.schema.trace import Prefill, Settings, Trace


def stream_trace(engine: Engine, prompt: str, settings: Settings | None = None,
                 cancel: threading.Event | None = None, keep_cache: bool = False) -> Generator[Event, None, Trace]:
    engine.ensure_device()
    start = now_ms(engine.device)                      # request start: TTFT counts from here
    settings = check_settings(settings or Settings(), engine.limits)
    prompt = clean_prompt(prompt, engine.limits)
    templated = template_text(engine, prompt, settings, engine.thinking_style)
    ids = engine.encode(templated, templated=settings.chat_template)
    check_length(len(ids), settings, engine.limits, engine.info.context_length)
    trace = new_trace(engine, prompt, templated, ids, settings)
    run = Run(engine, trace, ids, start, cancel or threading.Event())
    run.keep_cache = keep_cache and settings.use_cache
    return run.events()


def run_trace(engine: Engine, prompt: str, settings: Settings | None = None,
              cancel: threading.Event | None = None, keep_cache: bool = False) -> Trace:
    """The whole run at once."""
    return last_of(stream_trace(engine, prompt, settings, cancel, keep_cache=keep_cache))


class Run(CompiledSteps):
    """The per-run state: sequence, cache, RNG, text decoder. Nothing here is shared."""

    def __init__(self, engine: Engine, trace: Trace, ids: list[int], start: float,
                 cancel: threading.Event):
        s = trace.settings
        self.engine, self.trace, self.ids, self.start, self.cancel = engine, trace, list(ids), start, cancel
        self.tokenized_at = now_ms(engine.device)
        self.cache = DynamicCache(config=engine.model.config) if s.use_cache else None
        self.chain = warpers(s.temperature, s.top_k, s.top_p)
        self.generator = torch.Generator(device=engine.device).manual_seed(s.seed)
        self.text = TextStream()
        self.last_ready = start                    # wall clock when the previous token was ready
        self.clock = self.tokenized_at - start     # the model's clock: its own work only
        self.forced: tuple[int, str] | None = None  # a token the engine inserts at this step
        self.attention = AttentionRows(trace, s.attention, engine.limits.attention_max_bytes)
        self.kept = KeptStates(trace, engine.limits.lens_max_bytes)     # the logit lens's input, capped
        self.thinking = Thinking(engine, s, engine.thinking_style, trace.prompt.templated)
        self.keep_cache = False     # keep the finished run's cache for forking (engine.prefixes)
        self.fast: str | None = None   # the compiled graph ("plain" | "watch") the decode steps run, or None
        self.kv_per_token = 0          # the static cache's bytes a position, every layer (engine/run/compiled_steps.py)

    def events(self) -> Generator[Event, None, Trace]:
        trace = self.trace
        self.engine._count_run(+1)
        try:
            yield Event("tokens", trace)
            reason = self.prefill()
            yield Event("prefill", trace)
            if reason is None:
                self.choose_path()
            reason = yield from self.decode(reason)
            self.finish(reason)
            if self.keep_cache and self.cache is not None:
                cache = self.cache if self.fast is None else to_dynamic(self.cache, self.engine.model.config)
                self.engine.prefixes.keep(cache_key(trace), cache)
            yield Event("done", trace)
            return trace
        finally:                      # closed early (GeneratorExit) or failed: keep the partial trace
            self.engine._count_run(-1)
            if self.fast is not None:
                self.engine.fast.release()
            if trace.summary is None:
                self.finish("cancelled")

    def decode(self, reason: str | None) -> Generator[Event, None, str]:
        """Decode one token at a time until a reason to stop (or a cancel); an Event after each."""
        while reason is None:
            if self.cancel.is_set():
                return "cancelled"
            self.note_compile()
            try:
                reason = self.decode_one_token()
            except TimeoutError:       # the main thread never ran the step: the run ends, its steps kept,
                self.keep_cache = False    # not its cache (the step may yet write its position)
                return "timeout"
            yield Event("step", self.trace)
        return reason

    # --- phases -------------------------------------------------------------------------------
    def note_compile(self) -> None:
        """Mark the run if the compiled step is being built in this process now (the CLI's and the
        tests' in-process builds; the app builds in the back room, stopped while runs go on)."""
        fast = self.engine.fast
        if fast is not None and fast.compiling and self.trace.observation is not None:
            self.trace.observation.beside_compile = True

    def prefill(self) -> str | None:
        """One forward pass over every prompt token; its logits give the first new token."""
        self.note_compile()
        limits, n = self.engine.limits, len(self.ids)
        mapped = min(n, limits.attention_prompt_tokens) if self.attention.on else 0
        capture = self.capture(map_tokens=mapped)
        out = self.engine.forward(torch.tensor([self.ids]), self.cache, capture)
        self.trace.prefill = Prefill(tokens=n, tokenize_ms=ms3(self.tokenized_at - self.start), ms=ms3(out.ms),
                                     tokens_per_s=n / out.ms * 1000 if out.ms > 0 else 0.0)
        return self.emit(out, capture)

    def decode_one_token(self) -> str | None:
        """Feed the newest token (or, without a cache, the whole sequence) and pick the next one."""
        if self.fast is not None:
            return self.compiled_step()
        capture = self.capture()
        fed = self.ids[-1:] if self.cache is not None else self.ids
        return self.emit(self.engine.forward(torch.tensor([fed]), self.cache, capture), capture)

    def capture(self, map_tokens: int = 0) -> Capture:
        s = self.trace.settings
        return Capture(attention=self.attention.on, lens=s.logit_lens, map_tokens=map_tokens)

    # --- after each pass: pick, observe, record, stop -----------------------------------------
    def emit(self, out: Pass, capture: Capture) -> str | None:
        """Choose a token from the pass's logits, record the step, and say why to stop (None: go on)."""
        picked_from = now_ms(self.engine.device)
        token, logp_final = self.pick(out.logits)
        sampled = now_ms(self.engine.device)            # the model's part of this step ends here
        seen = self.observe(out, capture, token, logp_final)
        ready = now_ms(self.engine.device)
        self.record(seen, self.clocks(out.ms, sampled - picked_from, out.capture_ms + (ready - sampled), ready))
        return self.stop(token)

    def pick(self, logits: torch.Tensor) -> tuple[int, torch.Tensor | None]:
        """The next token as the model (and budget forcing) decides it; sets `self.forced`."""
        s, context = self.trace.settings, torch.tensor([self.ids])
        self.forced = self.thinking.forced_token(sampled_is_eos=False)
        token, logp_final = pick(logits, s, self.chain, context, self.generator,
                                 force=self.forced[0] if self.forced else None)
        if self.forced is None and token in self.engine.eos_ids:
            self.forced = self.thinking.forced_token(sampled_is_eos=True)   # no ending while still thinking
            if self.forced is not None:
                token, logp_final = pick(logits, s, self.chain, context, self.generator, force=self.forced[0])
        return token, logp_final

    def observe(self, out: Pass, capture: Capture, token: int, logp_final) -> Seen:
        """What the page shows of this token: its candidates, bytes and text, its phase, the lens,
        the attention row (the watching part of the step)."""
        choice = describe(out.logits, token, logp_final, self.trace.settings, self.engine.text_of)
        hidden = self.kept.keep(capture) if capture.lens else None   # the lens itself: on view (engine/model/lens.py)
        self.attention.keep(capture, keys=len(self.ids))     # the positions this pass's query saw
        return self.seen(token, choice, hidden)

    def seen(self, token: int, choice, hidden) -> Seen:
        """The new token appended, with its bytes, text and phase."""
        engine, forced = self.engine, self.forced
        self.ids.append(token)
        raw = engine.token_bytes.bytes_of(token)
        special = token in engine.token_bytes.special_ids
        text = "" if special else self.text.push(raw)
        phase = self.thinking.phase_of(engine.text_of(token) if special else text, forced[1] if forced else None)
        return Seen(token, raw, text, phase, forced is not None, choice, hidden)

    def clocks(self, forward_ms: float, sampling_ms: float, observe_ms: float, ready: float) -> Clocks:
        """The step's time: the model's own (pass + sampling; step 0 also the tokenize and prefill,
        so it is the TTFT), watching (the capture in the pass and everything after sampling) and
        waiting (the rest of the wall time since the previous token was ready at `ready`)."""
        first = not self.trace.steps
        # the model's clock advances by each step's rounded time, so the steps add up to it exactly
        model_ms = ms3((self.clock if first else 0.0) + forward_ms + sampling_ms)
        self.clock = model_ms if first else self.clock + model_ms
        wait_ms = max(0.0, (ready - self.last_ready) - model_ms - observe_ms)
        self.last_ready = ready
        return Clocks(ms=model_ms, t_ms=self.clock, forward_ms=forward_ms, observe_ms=observe_ms, wait_ms=wait_ms)

    def record(self, seen: Seen, clocks: Clocks) -> None:
        """The step into the trace, with the cache as it stands (on the compiled path from arithmetic: the
        positions fed times each one's bytes in every layer, no read of the device's tensors)."""
        if self.fast is None:
            tokens, size = cache_tokens(self.cache), cache_bytes(self.cache)
        else:
            tokens = len(self.ids) - 1
            size = tokens * self.kv_per_token
        self.trace.steps.append(make_step(
            len(self.trace.steps), seen.token, self.engine.text_of(seen.token), seen.raw, seen.text, seen.choice,
            clocks, tokens, size, seen.phase, seen.forced, hidden=seen.hidden))

    def stop(self, token: int) -> str | None:
        """Why the run ends after this token (one of trace.STOP_REASONS), or None to go on."""
        s = self.trace.settings
        if token in self.engine.eos_ids and not s.ignore_eos:
            return "eos"
        if s.stop and any(self.trace.output_text.endswith(x) for x in s.stop):
            return "stop"
        if len(self.trace.steps) >= s.max_new_tokens:
            return "max_tokens"
        return None

    def finish(self, reason: str) -> None:
        steps = self.trace.steps
        if steps:
            steps[-1].text += self.text.flush()
        wall = (self.last_ready if steps else now_ms(self.engine.device)) - self.start
        self.trace.summary = summarize(steps, reason, self.cache, wall, wall_ms=ms3(wall))

