"""How the tests compare numbers that two code paths computed (docs/layout.md, "How tests compare floats").

Two code paths that compute the same quantity — batched and looped, cached and recomputed, compiled
and eager, the engine's capture and transformers' own — add the same fp32 terms in another order, and
the order also depends on the machine: ATen takes AVX-512 kernels on an Intel Xeon and AVX2 ones on an
AMD EPYC, and BLAS splits a matrix product otherwise with 1 or 2 threads. Each rounding is ~6e-8 of the
value; a sum over thousands of terms in another order moves by ~1e-6..1e-5 of the values' scale (seen: a
lens probability 1.48e-5 apart between the batched and the looped lens on an AMD EPYC, under a
tolerance of 1e-5 that held on a Xeon).
So, by what is compared:

- a float two paths computed: within ORDER of the values' scale (`close`): 1 for a probability, the
  largest |logit| for logits. A tolerance tighter than that tests the CPU, not the code.
- a token two greedy paths chose: equal, except where the reference's top two logits are within TIE of
  each other (`same_greedy`): there the other path may take the other one, and from there each continues
  its own text. A tie is rare in a trained model; tiny random-weight models have them often.
- a packed attention value (engine/schema/packed.py: steps of 1/4095): within a packing step plus ORDER
  against the true value (PACKED), a running sum within half a step plus ORDER (PACKED_SUM); two packed
  rows of one quantity (both paths packed) within two steps plus ORDER (PACKED_PAIR).
- what a step's pass captured (its attention row, its lens) after two greedy runs part: compared only up
  to the step where they part (`fed_alike`); past it the passes read other tokens.
- the lens's guess at each layer (an argmax of its own logits): equal, or that layer's top two within TIE
  (`same_tops`, gaps from `lens_margins`).
- the same floats added or divided twice in the test (a ratio of two fields, a sum the engine wrote):
  pytest.approx's default (1e-6 relative): one path, no reordering to allow for.

`make numerics` runs every test marked `numerics` (those comparing two paths' floats) under each ATen
kernel set the CPU has (avx512, avx2, default) and with 1 and 2 torch threads: a tolerance that only holds
for one CPU kind fails there, on either kind of machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from engine.schema.packed import SCALE

ORDER = 1e-4                 # fp32 sum order, relative to the values' scale (the worst seen: 1.5e-5)
TIE = 1e-2                   # logits this close are a tie two summation orders may break either way
PACKED = 1 / SCALE + ORDER   # one packed attention value (a probability: scale 1)
PACKED_SUM = 0.5 / SCALE + ORDER   # a running sum along a packed row (each one rounded once)
PACKED_PAIR = 2 / SCALE + ORDER    # two packings of one row: a value's two roundings may each go one step apart


def close(got, want, scale: float | None = None) -> bool:
    """`got` equals `want` (floats or arrays of one shape) within ORDER of `scale`: by default the
    larger of 1 and the largest |want| (probabilities: 1; logits: their largest magnitude)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False
    if scale is None:
        scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    return bool(np.abs(got - want).max(initial=0.0) <= ORDER * scale)


def worst(got, want) -> float:
    """The largest |got - want| (for an assertion's message)."""
    return float(np.abs(np.asarray(got, dtype=np.float64) - np.asarray(want, dtype=np.float64)).max(initial=0.0))


def margins(steps) -> list[float]:
    """Each trace step's top-two logit gap (its candidates, best first): how near a tie its choice was.
    A step with one candidate is no tie (inf)."""
    out = []
    for step in steps:
        logits = sorted((c.logit for c in step.candidates), reverse=True)
        out.append(logits[0] - logits[1] if len(logits) > 1 else math.inf)
    return out


def same_greedy(got: Sequence[int], want: Sequence[int], gaps: Sequence[float]) -> bool:
    """Two greedy runs of one prompt agree: the same tokens, or the same up to the first step where they
    part, if that step was a tie (`gaps[i]`, the top-two logit gap at step i of either run, under TIE).
    After a parting each run continues its own text, so nothing after it is compared."""
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return i < len(gaps) and gaps[i] < TIE
    return len(got) == len(want)


def parted(got: Sequence[int], want: Sequence[int], gaps: Sequence[float]) -> str:
    """Where two greedy runs part and how near a tie it was (an assertion's message)."""
    i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    gap = gaps[i] if i < len(gaps) else None
    return f"part at step {i} of {len(got)}/{len(want)}: top-two logit gap {gap} (a tie is < {TIE})"


def assert_same_greedy(got: Sequence[int], want: Sequence[int], gaps: Sequence[float]) -> None:
    """`same_greedy`, or an AssertionError saying where the runs parted and how near a tie it was."""
    assert same_greedy(got, want, gaps), parted(got, want, gaps)


def fed_alike(got: Sequence[int], want: Sequence[int]) -> int:
    """How many steps of two greedy runs came from passes over the same tokens: every step while they
    agree, and up to the step where they part (its pass still read the same context; only its choice
    differs). A step's attention row and lens are its pass's, so these are the steps whose captures
    compare; the passes after a parting read other tokens."""
    i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
    return min(len(got), len(want)) if i is None else i + 1


def same_tops(got: Sequence[int], want: Sequence[int], gaps: Sequence[float]) -> bool:
    """Argmaxes taken each from logits of its own (the lens's guess at each layer) agree: each one equal,
    or a tie there (`gaps[i]`, that argmax's top-two logit gap, under TIE). Unlike a greedy run, one
    argmax does not feed the next, so every position is compared."""
    return len(got) == len(want) == len(gaps) and all(a == b or g < TIE for a, b, g in zip(got, want, gaps))


def assert_same_tops(got: Sequence[int], want: Sequence[int], gaps: Sequence[float]) -> None:
    """`same_tops`, or an AssertionError saying where the guesses differ and how near a tie each was."""
    assert same_tops(got, want, gaps), parted_tops(got, want, gaps)


def lens_margins(engine, steps) -> list[list[float]]:
    """Each step's lens (from its kept states, engine/model/lens.py): every layer's top-two logit gap
    through the final norm and the head, and the last layer's from the step's candidates (the lens takes
    the model's own top token there)."""
    import torch

    from engine.model.hooks import final_norm
    from engine.model.lens import final_logits, hidden_array
    head, norm = engine.model.get_output_embeddings(), final_norm(engine.model)
    out = []
    with torch.inference_mode():
        for step, last in zip(steps, margins(steps)):
            hidden = torch.from_numpy(hidden_array(step.hidden).copy())
            at = next(norm.parameters(), head.weight)
            logits = head.forward(norm.forward(hidden.to(at.device, at.dtype))).float()     # [layers - 1, vocab]
            top = final_logits(engine.model, logits).topk(2, dim=-1).values
            out.append([*(top[:, 0] - top[:, 1]).tolist(), last])
    return out


def parted_tops(got: Sequence[int], want: Sequence[int], gaps: Sequence[float]) -> str:
    """Where two sets of argmaxes differ and how near a tie each was (an assertion's message)."""
    apart = [(i, gaps[i] if i < len(gaps) else None) for i, (a, b) in enumerate(zip(got, want)) if a != b]
    return f"{len(got)}/{len(want)} guesses; differ at (index, top-two gap): {apart} (a tie is < {TIE})"
