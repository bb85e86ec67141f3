"""engine/compiled/check.py's token check: a compiled step's choice is eager's, or eager's near tie
(two summation orders may break a tie either way); anything else is a different token."""

import torch

from engine.compiled.check import TIE_REL, TIE_REL_HALF, same_choice


def test_the_same_token_is_the_same_choice():
    assert same_choice(torch.tensor([1.0, 5.0, 2.0]), 1)


def test_a_near_tie_broken_the_other_way_is_the_same_choice():
    scale = 20.0
    gap = TIE_REL[torch.float32] * scale / 2
    logits = torch.tensor([scale, scale - gap, 0.0])
    assert same_choice(logits, 1)                              # within the tie: either is right
    assert not same_choice(logits, 2)                          # the third is another token


def test_a_clear_winner_missed_is_a_different_token():
    logits = torch.tensor([20.0, 19.9, 0.0])                   # 0.1 apart: 5x fp32's tie at this scale
    assert not same_choice(logits, 1)


def test_half_precision_allows_its_coarser_rounding():
    logits = torch.tensor([20.0, 19.9, 0.0], dtype=torch.bfloat16)
    assert TIE_REL_HALF * 20.0 > 0.1 and same_choice(logits, 1)
