"""Experiment 7: speculative decoding through transformers, measured against plain greedy decoding.

Speculative decoding guesses several next tokens cheaply, then lets the model check all of them in
one forward pass (experiment 6 measured what that pass costs). In greedy decoding a drafted token
is kept only if it is exactly the model's own choice, so the output should not change, only the
number of passes; a pass over several tokens rounds differently from a one-token pass and can tip a
near tie, so each arm's tokens are compared with plain greedy's (`identical`). The arms, each a `model.generate(do_sample=False)` call on the same prompt:

- `plain`: one forward pass per token.
- `lookup_3`, `lookup_10`: prompt-lookup decoding (`prompt_lookup_num_tokens`): the draft is copied
  from the prompt wherever the last tokens generated also occur in it. Free to draft, and it pays
  on input-grounded prompts (summarise, quote, answer from a passage), hence this prompt.
- `draft`: assisted generation (`assistant_model`): a smaller model with the same vocabulary drafts,
  when one is given (the host names it; the embedded model has no smaller sibling here).

What each pass drafted and kept is observed by wrapping the candidate generator transformers builds
for the call (its `get_candidates` and `update_candidate_strategy`), not by reimplementing the loop.
Timed: the whole `generate` call of each arm (prefill included, same tokens out), inside
engine.exclusive(), SDPA switched in before the clock, warm-up first, repeats interleaved across
arms, medians with their spread.
"""

from __future__ import annotations

import contextlib
import statistics
import threading

import torch

from engine.model.core import Engine
from engine.schema.trace import Settings
from engine.lab.measure import Steps, Stopped, attention, spread, timed_ms

PASSAGE = ("The Great Barrier Reef is the world's largest coral reef system, composed of over 2,900 individual "
           "reefs and 900 islands stretching for over 2,300 kilometres over an area of approximately 344,400 square "
           "kilometres. The reef is located in the Coral Sea, off the coast of Queensland, Australia. It can be "
           "seen from outer space and is the world's biggest single structure made by living organisms.")
PROMPT = f"{PASSAGE}\n\nSummarize the passage above in two sentences, reusing its wording."
LOOKUPS = (3, 10)
KERNEL = "sdpa"
SIZES = {False: {"new_tokens": 96, "repeats": 3}, True: {"new_tokens": 24, "repeats": 1}}


class Watch:
    """Records, per verification pass of one `generate` call, the drafted token ids and the ids the
    pass added to the output. Installs itself on one model instance for the length of a `with`
    (inside engine.exclusive, so no other call sees it)."""

    def __init__(self, model):
        self.model = model
        self.passes: list[dict] = []

    @contextlib.contextmanager
    def installed(self):
        build = self.model._get_candidate_generator

        def watched(*args, **kwargs):
            generator = build(*args, **kwargs)
            get, update = generator.get_candidates, generator.update_candidate_strategy

            def get_candidates(input_ids, **kw):
                candidates, logits = get(input_ids, **kw)
                start = input_ids.shape[1]
                self.passes.append({"start": start, "drafted": candidates[0, start:].tolist()})
                return candidates, logits

            def update_candidate_strategy(input_ids, scores, num_matches):
                last = self.passes[-1]
                last["emitted"] = input_ids[0, last.pop("start"):].tolist()
                return update(input_ids, scores, num_matches)
            generator.get_candidates = get_candidates
            generator.update_candidate_strategy = update_candidate_strategy
            return generator
        self.model._get_candidate_generator = watched          # this instance only
        try:
            yield self
        finally:
            del self.model._get_candidate_generator


def judged(drafted: list, emitted: list) -> dict:
    """What one pass did with its draft. The output keeps the drafted tokens up to the model's first
    disagreement, then the model's own token; a pass cut by the length budget or an end-of-text
    token stops before that, and its drafted tokens past the end were never judged ("unused")."""
    accepted = 0
    while accepted < min(len(drafted), len(emitted)) and drafted[accepted] == emitted[accepted]:
        accepted += 1
    own = len(emitted) - accepted                          # 1, or 0 when the pass was cut
    rest = len(drafted) - accepted
    return {"accepted": accepted, "own": own, "rejected": rest if own else 0, "unused": 0 if own else rest}


def _arms(draft: Engine | None) -> dict[str, dict]:
    arms: dict[str, dict] = {"plain": {}}
    for k in LOOKUPS:
        arms[f"lookup_{k}"] = {"prompt_lookup_num_tokens": k}
    if draft is not None:
        arms["draft"] = {"assistant_model": draft.model}
    return arms


def draft_problem(engine: Engine, draft: Engine | None) -> str | None:
    """Why `draft` cannot draft for `engine` (None if it can): transformers' assisted generation
    compares token ids, so both need one vocabulary."""
    if draft is None:
        return "no draft model: the host names none (python -m engine lab --draft MODEL)"
    if draft.tokenizer.get_vocab() != engine.tokenizer.get_vocab():
        return f"{draft.info.id} has another vocabulary than {engine.info.id}; a draft must share it"
    return None


def _generate(model, ids: torch.Tensor, new_tokens: int, extra: dict) -> tuple[float, list[int], list[dict]]:
    watch = Watch(model)
    with watch.installed():
        ms, out = timed_ms(lambda: model.generate(ids, max_new_tokens=new_tokens, do_sample=False, **extra),
                           model.device)
    return ms, out[0, ids.shape[1]:].tolist(), watch.passes


def run(engine: Engine, quick: bool = False, progress=None, cancel: threading.Event | None = None,
        draft: Engine | None = None) -> dict:
    size = SIZES[quick]
    problem = draft_problem(engine, draft)
    arms = _arms(None if problem else draft)
    model = engine.model
    ids = engine.encode(engine.apply_template(PROMPT, Settings()), templated=True)
    steps = Steps(progress, cancel, total=len(arms) * (size["repeats"] + 1))
    times: dict[str, list[float]] = {a: [] for a in arms}
    tokens: dict[str, list[list[int]]] = {a: [] for a in arms}
    passes: dict[str, list[dict]] = {}
    partial = False
    drafting = None if problem else draft
    try:
        with engine.exclusive("speculative"), attention(model, KERNEL), torch.inference_mode():
            with _draft_held(engine, drafting):
                sequence = torch.tensor([ids], device=model.device)
                for arm, extra in arms.items():                       # warm-up: one-off costs of each arm
                    steps.tick(f"warm-up, {arm.replace('_', ' ')}")
                    _generate(model, sequence, size["new_tokens"], extra)
                for r in range(size["repeats"]):                      # interleaved across arms
                    for arm, extra in arms.items():
                        steps.tick(f"{arm.replace('_', ' ')}, run {r + 1} of {size['repeats']}")
                        ms, out, seen = _generate(model, sequence, size["new_tokens"], extra)
                        times[arm].append(ms)
                        tokens[arm].append(out)
                        passes[arm] = seen
    except Stopped:
        partial = True
    return summarize(engine, times, tokens, passes, len(ids), size, partial, draft, problem)


@contextlib.contextmanager
def _draft_held(engine: Engine, draft: Engine | None):
    """The draft engine held too (a visitor's run on it would share the machine with the clock), and
    its assistant settings fixed for the experiment: transformers' default schedule ("heuristic")
    carries the draft length over from one `generate` call to the next, which would make repeats
    differ; "heuristic_transient" starts each call afresh."""
    if draft is None:
        yield
        return
    config = draft.model.generation_config
    before = config.num_assistant_tokens_schedule
    with draft.exclusive("speculative") if draft is not engine else contextlib.nullcontext():
        config.num_assistant_tokens_schedule = "heuristic_transient"
        try:
            yield
        finally:
            config.num_assistant_tokens_schedule = before


def summarize(engine: Engine, times: dict, tokens: dict, passes: dict, prompt_tokens: int, size: dict,
              partial: bool, draft: Engine | None, problem: str | None) -> dict:
    plain = statistics.median(times["plain"]) if times.get("plain") else None
    reference = tokens["plain"][0] if tokens.get("plain") else None
    strips: dict[str, list[dict]] = {}
    rows = []
    for arm, ms in times.items():
        if not ms:
            continue
        median, out = statistics.median(ms), tokens[arm][-1]
        seen = [{**p, **judged(p["drafted"], p["emitted"])} for p in passes.get(arm, [])]
        count = {key: sum(p[key] for p in seen) for key in ("accepted", "rejected", "unused")}
        judged_drafts = count["accepted"] + count["rejected"]
        rows.append({
            "arm": arm, "ms": spread(ms), "new_tokens": len(out), "tokens_per_s": len(out) / median * 1000,
            "speedup": plain / median if plain else None,
            "identical": reference is not None and all(t == reference for t in tokens[arm]),
            # plain greedy makes one pass per token and drafts nothing
            "passes": len(seen) if seen else len(out), "drafted": sum(len(p["drafted"]) for p in seen), **count,
            "acceptance": count["accepted"] / judged_drafts if judged_drafts else None,
            "tokens_per_pass": len(out) / len(seen) if seen else 1.0,
        })
        if seen:
            strips[arm] = [{"drafted": [engine.text_of(t) for t in p["drafted"]],
                            "emitted": [engine.text_of(t) for t in p["emitted"]],
                            **{key: p[key] for key in ("accepted", "own", "rejected", "unused")}} for p in seen]
    best = max((r for r in rows if r["arm"] != "plain"), key=lambda r: r["speedup"] or 0, default=None)
    return {"prompt": PROMPT, "prompt_tokens": prompt_tokens, "max_new_tokens": size["new_tokens"],
            "repeats": size["repeats"], "warmup_runs": 1, "partial": partial, "rows": rows, "strips": strips,
            "identical": bool(rows) and all(r["identical"] for r in rows),
            "best": best["arm"] if best else None, "best_speedup": best["speedup"] if best else None,
            "draft_model": None if problem else draft.info.id, "draft_skipped": problem,
            "draft_given": draft is not None,
            "answer": engine.tokenizer.decode(reference, skip_special_tokens=True) if reference else None,
            "attn_implementation": KERNEL, "exclusive": True,
            "note": "timed: each arm's whole generate() call (prefill included), greedy; identical means every "
                    "repeat's tokens equal plain greedy's; acceptance = accepted / (accepted + rejected): drafted "
                    "tokens past the end of the output were never judged (unused)"}
