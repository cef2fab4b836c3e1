"""The final return, defined once with the contract: the mean over the latest whole rollouts
that hold FINAL_EPISODES episodes or more; the same figure sanctum's return curve ends on."""

from __future__ import annotations

import math
import random

import pytest

from sanctum.reports.return_curve import ReturnPoint, smoothed
from telemetry.returns import FINAL_EPISODES, FINAL_RETURN, final_return


def test_the_window_is_the_latest_whole_rollouts_with_enough_episodes() -> None:
    # 30 episodes at 0, then 8 at 10 and 15 at 40: the last two rollouts hold 23 >= 20
    rollouts = [(30, 0.0), (8, 10.0), (15, 40.0)]
    assert final_return(rollouts) == pytest.approx((8 * 10 + 15 * 40) / 23)
    assert final_return(rollouts, episodes=15) == 40.0  # the last rollout alone holds 15
    assert final_return([(3, 5.0), (2, 10.0)]) == pytest.approx(7.0)  # fewer: all of them


def test_rollouts_without_an_episode_or_a_finite_mean_say_nothing() -> None:
    assert final_return([]) is None
    assert final_return([(0, None)]) is None
    assert final_return([(25, 1.0), (0, None), (4, math.nan), (3, math.inf)]) == 1.0


def test_sanctum_s_curve_ends_on_the_same_figure() -> None:
    """The running window sanctum draws reaches, at the last rollout, this definition."""
    rng = random.Random(28)
    for _ in range(50):
        rollouts = [(rng.randint(1, 9), rng.uniform(-50, 500)) for _ in range(rng.randint(1, 40))]
        points = [ReturnPoint(i, n, mean) for i, (n, mean) in enumerate(rollouts)]
        assert final_return(rollouts) == pytest.approx(smoothed(points)[-1], rel=1e-12)


def test_the_label_names_the_window() -> None:
    assert FINAL_RETURN == f"final return (mean of the last {FINAL_EPISODES}+ episodes)"
