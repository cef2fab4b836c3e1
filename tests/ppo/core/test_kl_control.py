"""The KL coefficient controllers against their closed forms on scripted KL sequences."""

from __future__ import annotations

import math

import pytest

from ppo.core.kl_control import KL_COEF_MAX, KL_COEF_MIN, adapt_penalty, adapt_proportional

SCRIPT = [0.01, 0.05, 0.2, 0.3, 0.1, 0.09, 0.0, 0.02, 0.15, 1.0]
"""A scripted reference KL per update (target 0.1): under, over, far over, at, zero."""


def test_the_proportional_controller_follows_the_closed_form_on_a_script() -> None:
    target, n_steps, horizon = 0.1, 512, 2048
    coef, got, expected = 0.05, [], []
    closed = 0.05
    for kl in SCRIPT:
        coef = adapt_proportional(coef, kl, target, n_steps, horizon)
        got.append(coef)
        error = min(max(kl / target - 1.0, -0.2), 0.2)
        closed *= 1.0 + error * n_steps / horizon
        expected.append(closed)
    assert got == pytest.approx(expected, rel=1e-12)
    # on the script: down by 5% per update under target, up by 5% past +20%, still at target
    assert got[0] == pytest.approx(0.05 * 0.95) and got[2] == pytest.approx(got[1] * 1.05)
    assert got[4] == got[3]  # exactly at target: no change


def test_the_proportional_controller_ignores_a_non_finite_kl_and_stays_in_range() -> None:
    assert adapt_proportional(0.3, math.nan, 0.1, 512, 2048) == 0.3
    assert adapt_proportional(0.3, math.inf, 0.1, 512, 2048) == 0.3
    assert adapt_proportional(KL_COEF_MAX, 10.0, 0.1, 10**6, 1) == KL_COEF_MAX
    assert adapt_proportional(KL_COEF_MIN, 0.0, 0.1, 4, 1) == KL_COEF_MIN  # 1 - 0.2 * 4 < 0


def test_the_penalty_controller_doubles_halves_or_holds() -> None:
    assert adapt_penalty(0.2, 0.16, 0.1) == 0.4  # > 1.5 x target
    assert adapt_penalty(0.2, 0.06, 0.1) == 0.1  # < target / 1.5
    assert adapt_penalty(0.2, 0.1, 0.1) == 0.2
    assert adapt_penalty(0.2, math.nan, 0.1) == 0.2
