"""A run's decode steps on the compiled path (engine/compiled/fast.py): the step, the choice and the
watching on the device, and one read of their results to the host a step.

On a GPU every read of a tensor's value waits for the device to finish (a sync), and a compiled step's
bookkeeping read ~40 of them: the static cache's length layer by layer (30 layers here), a device-synced
clock around each part, the token, the choice's figures apart. Here the choice (engine/run/sampling.choice_tensor: token, rank,
probabilities, entropies, the top candidates), the new token's attention rows and the layers'
states for the lens are concatenated on the device and read once (`.cpu().numpy()`); the cache's
length and bytes come from arithmetic, the step's time from DeviceClock marks (CUDA events). The one
exception: a token that would end a thought while the run still thinks (budget forcing) is read, and
the forced one read again (tests/tiny/test_graph.py counts the reads).
"""

from __future__ import annotations

import numpy as np
import torch

from engine.model.clock import DeviceClock, now_ms
from engine.run.sampling import HEAD, choice_tensor, choose, read_choice


class CompiledSteps:
    """Run's compiled half (engine/run/generate.py's Run mixes it in)."""

    def choose_path(self) -> None:
        """After the prefill: decode with the compiled step if it is loaded and the run fits its
        static cache (the cache then moves into a static one); else eager."""
        fast, s = self.engine.fast, self.trace.settings
        if fast is None or self.cache is None or fast.device != self.engine.device:
            return
        bucket = fast.bucket(len(self.ids) + s.max_new_tokens, self.engine.info.context_length)
        variant = "watch" if self.attention.on or s.logit_lens else "plain"
        if not fast.acquire(variant, bucket):
            return
        self.fast = variant                 # released when the run ends (events' finally)
        with self.engine.lock:
            self.cache = fast.adopt(self.cache, bucket)
        self.trace.observation.decode, self.trace.observation.static_cache_tokens = "compiled", bucket
        self.kv_per_token = sum(t.numel() // t.shape[-2] * t.element_size()
                                for layer in self.cache.layers for t in (layer.keys, layer.values))

    def compiled_step(self) -> str | None:
        """decode_one_token on the compiled path. The whole step runs on the fast path's thread (the CPU's
        main thread: engine/compiled/main_thread.py says why; a GPU's graph thread), sampling and watching
        too. The lock is taken here, before the step is queued: what holds it (a pass, a fork, the floor,
        the lab) holds this run as it holds an eager one, never that thread (other models' steps go on),
        and the step's time limit counts from here."""
        with self.engine.lock:
            return self.engine.fast.runner.run(self._compiled_step)

    def _compiled_step(self) -> str | None:
        engine, s, clock = self.engine, self.trace.settings, DeviceClock(self.engine.device)
        begun, keys = now_ms(), len(self.ids)
        out = engine.fast.step(self.fast, self.ids[-1], keys - 1, self.cache)
        rows = self.fast == "watch" and self.attention.on
        lens = self.fast == "watch" and s.logit_lens and not self.kept.full()
        flat, sampled = self._read(out, keys, rows, lens, clock, force=self._forced(sampled_is_eos=False))
        token = int(flat[0])
        if self.forced is None and token in engine.eos_ids and self._forced(sampled_is_eos=True) is not None:
            flat, sampled = self._read(out, keys, rows, lens, clock, force=self.forced[0])  # no ending while thinking
            token = int(flat[0])
        ready = now_ms()
        forward_ms, sampling_ms = clock.between(out.began, out.ended), clock.between(out.ended, sampled)
        k = min(s.top_candidates, out.logits.numel())       # choice_tensor's candidates
        choice, rest = read_choice(flat[:HEAD + 4 * k], engine.text_of), flat[HEAD + 4 * k:]
        with engine.fast.runner.committing():   # a step its run gave up waiting for stops here, unrecorded
            if rows:
                layers, heads = out.rows.shape[:2]
                self.attention.keep_array(rest[:layers * heads * keys].reshape(layers, heads, keys))
                rest = rest[layers * heads * keys:]
            hidden = self.kept.keep_array(rest.reshape(len(out.hidden) - 2, -1)) if lens else None
            clocks = self.clocks(forward_ms, sampling_ms, max(0.0, ready - begun - forward_ms - sampling_ms), ready)
            self.record(self.seen(token, choice, hidden), clocks)
        return self.stop(token)

    def _forced(self, sampled_is_eos: bool):
        self.forced = self.thinking.forced_token(sampled_is_eos=sampled_is_eos)
        return self.forced[0] if self.forced else None

    def _read(self, out, keys: int, rows: bool, lens: bool, clock: DeviceClock, force: int | None) -> tuple[np.ndarray, object]:
        """Choose on the device, then read the choice, the rows and the states to the host at once."""
        token, logp_final = choose(out.logits, self.trace.settings, self.chain, torch.tensor([self.ids]),
                                   self.generator, force=force)
        sampled = clock.mark()                   # the model's part of this step ends here
        parts = [choice_tensor(out.logits, token, logp_final, self.trace.settings)]
        if rows:
            parts.append(out.rows[:, :, :keys].reshape(-1))
        if lens:                 # hidden[0] is the embeddings; hidden[i + 1] the output of layer i
            parts.append(torch.stack([h[0, -1] for h in out.hidden[1:-1]]).float().reshape(-1))
        return torch.cat([p.float() for p in parts]).cpu().numpy(), sampled     # the step's one host read
