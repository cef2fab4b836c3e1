"""The frame budget: one frame a slot on average, two in a row at most."""

from __future__ import annotations

import pytest

from sanctum.live.pacing import FrameBudget


def test_two_frames_in_a_row_then_one_a_slot() -> None:
    budget = FrameBudget(0.1)
    assert budget.spend(0.0) == 0.0, "the first frame leaves one in hand"
    assert budget.spend(0.01) == pytest.approx(0.1 - 0.01), "the second spends it"
    assert budget.spend(0.1) == pytest.approx(0.1), "then one a slot"


def test_a_trainer_at_twice_the_frame_rate_gets_two_lines_in_three_drawn_as_they_arrive() -> None:
    """Lines every 50 ms, a frame a 75 ms: a line is drawn when the budget allows it."""
    budget, ready_at, drawn = FrameBudget(0.075), 0.0, []
    for line in range(30):
        at = line * 0.05
        if at >= ready_at - 1e-9:
            ready_at = at + budget.spend(at)
            drawn.append(line)
    assert drawn[:4] == [0, 1, 2, 3], "the first frames spend what the budget holds"
    assert drawn[4:] == [n for n in range(5, 30) if n % 3 != 1], "then two lines in three"


def test_idle_time_refills_two_frames_no_more() -> None:
    budget = FrameBudget(0.1)
    budget.spend(0.0)
    budget.spend(0.0)
    assert budget.spend(10.0) == 0.0
    assert budget.spend(10.0) > 0.0


def test_a_frame_drawn_regardless_runs_up_no_debt() -> None:
    budget = FrameBudget(0.1)
    waits = [budget.spend(0.0) for _ in range(5)]  # drawn whatever it said (a trainer died)
    assert waits[-1] == pytest.approx(0.1), "the next one slot on, not three"


def test_no_slot_draws_every_frame() -> None:
    budget = FrameBudget(0.0)
    assert [budget.spend(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
