"""Controllers of KL coefficients: pure functions from the coefficient in force and the
measured KL to the next coefficient.

Two controllers, both bounded to [:data:`KL_COEF_MIN`, :data:`KL_COEF_MAX`]:

- :func:`adapt_penalty`, the PPO paper's (Schulman et al. 2017, section 4) for the penalty
  on KL(pi_old || pi_new): x2 above 1.5 x target, /2 below target / 1.5;
- :func:`adapt_proportional`, the proportional controller of Ziegler et al. 2019 ("Fine-
  Tuning Language Models from Human Preferences"; verl's ``AdaptiveKLController``) for the
  reference KL: the error KL/target - 1, clipped to +-0.2, moves the coefficient by that
  fraction per ``horizon`` environment steps.
"""

from __future__ import annotations

import math
from typing import Final

KL_COEF_MIN: Final = 1e-6
KL_COEF_MAX: Final = 1e6
"""Range of an adaptive KL coefficient. The PPO paper's update multiplies it by 2 or 1/2
each time, so unbounded, a long run under target drives it to 0.0 (about 1075 halvings;
0 * 2 stays 0, the penalty could never return) and one over target drives it to inf (an
inf loss that skips every step). Both bounds are far outside any useful coefficient."""

PROPORTIONAL_CLIP: Final = 0.2
"""The largest relative error the proportional controller acts on (Ziegler et al.)."""


def _bounded(coef: float) -> float:
    return min(max(coef, KL_COEF_MIN), KL_COEF_MAX)


def adapt_penalty(coef: float, measured: float, target: float) -> float:
    """The PPO paper's update; a non-finite measurement leaves ``coef`` as it is."""
    if not math.isfinite(measured):
        return coef
    if measured > 1.5 * target:
        return _bounded(coef * 2.0)
    if measured < target / 1.5:
        return _bounded(coef / 2.0)
    return coef


def adapt_proportional(
    coef: float, measured: float, target: float, n_steps: int, horizon: int
) -> float:
    """coef * (1 + clip(measured / target - 1, -0.2, 0.2) * n_steps / horizon); a
    non-finite measurement leaves ``coef`` as it is."""
    if not math.isfinite(measured):
        return coef
    error = min(max(measured / target - 1.0, -PROPORTIONAL_CLIP), PROPORTIONAL_CLIP)
    return _bounded(coef * (1.0 + error * n_steps / horizon))
