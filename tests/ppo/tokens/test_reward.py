"""The reward of the design on hand-made cases."""

from __future__ import annotations

import pytest
import torch

from ppo.tokens.reward import applied_positions, reward_terms


def _terms(pred, true, applied, answered=True, generated=6, scale=0.5, penalty=0.0):
    return reward_terms(
        torch.tensor([pred]),
        torch.tensor([true]),
        torch.tensor([applied]),
        torch.tensor([answered]),
        torch.tensor([generated]),
        scale,
        penalty,
    )


def test_every_digit_right_is_the_full_reward() -> None:
    t = _terms([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [True] * 5)
    assert t.reward_full.item() == 1.0 and t.reward_final.item() == 1.0
    assert (t.applied_count.item(), t.correct_count.item()) == (5, 5)


def test_partial_counts_only_applied_positions() -> None:
    # true digits 0 at positions 1 and 3: position 1 kept, position 3 dropped
    applied = [True, True, True, False, True]
    t = _terms([7, 0, 9, 1, 4], [7, 0, 2, 0, 5], applied)
    assert (t.applied_count.item(), t.correct_count.item()) == (4, 2)
    assert t.reward_full.item() == 0.0
    assert t.reward_partial.item() == pytest.approx(0.5 * 2 / 4)
    assert t.reward_final.item() == pytest.approx(0.25)


def test_a_dropped_wrong_zero_costs_nothing() -> None:
    t = _terms([1, 2, 3, 4, 9], [1, 2, 3, 4, 0], [True, True, True, True, False])
    assert t.reward_partial.item() == pytest.approx(0.5)  # 4/4 applied right, not full
    assert t.reward_full.item() == 0.0


def test_nothing_applied_is_zero() -> None:
    t = _terms([1, 1, 1, 1, 1], [0, 0, 0, 0, 0], [False] * 5)
    assert t.applied_count.item() == 0 and t.reward_final.item() == 0.0


def test_max_new_tokens_earns_zero_even_with_right_digits() -> None:
    t = _terms([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [True] * 5, answered=False, generated=10)
    assert t.reward_full.item() == 0.0 and t.reward_final.item() == 0.0


def test_length_penalty_applies_in_every_case() -> None:
    full = _terms([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [True] * 5, generated=6, penalty=0.01)
    assert full.reward_final.item() == pytest.approx(1.0 - 0.06)
    cut = _terms([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [True] * 5, False, 10, penalty=0.01)
    assert cut.reward_final.item() == pytest.approx(-0.1)


def test_zeros_are_kept_with_their_probability_and_non_zeros_always() -> None:
    true = torch.tensor([[0, 3, 0, 0, 0]]).repeat(20_000, 1)
    keep = torch.tensor([0.0, 0.0, 0.25, 0.5, 1.0])
    applied = applied_positions(true, keep, torch.Generator().manual_seed(0)).float().mean(0)
    assert applied[0] == 0.0 and applied[1] == 1.0 and applied[4] == 1.0
    assert applied[2].item() == pytest.approx(0.25, abs=0.02)
    assert applied[3].item() == pytest.approx(0.5, abs=0.02)
