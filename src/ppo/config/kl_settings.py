"""The KL settings :class:`~ppo.config.PPOConfig` and
:class:`~ppo.tokens.config.TokenPPOConfig` both declare: the estimator of KL(pi_old ||
pi_new), the early stop's threshold, the log-ratio clamp, and the reference KL's loss
coefficient, estimator and adaptive controller (target and horizon).

Each is declared once here, its default, validator and doc together. A config places it
among its own fields (``ppo config`` lists them in the config's order) and gives the words
in which the two differ: the unit the KL is taken over (a sample, a generated token), what
a step counts, what reads the estimator, how the early stop is checked.
"""

from __future__ import annotations

from typing import Any

from ppo.config import validators as valid
from ppo.config.settings import setting
from ppo.core import kl
from ppo.core.kl_control import KL_COEF_MAX, KL_COEF_MIN

estimator_name = valid.choice(kl.ESTIMATORS, kl.ESTIMATORS_LISTED)
"""The validator of an estimator field: a name registered in :mod:`ppo.core.kl`."""


def kl_estimator(*, reads: str) -> Any:
    """The estimator of approx_kl; ``reads``: what uses it besides."""
    return setting("k3", estimator_name, f"Estimator of KL(pi_old || pi_new) for {reads}.")


def max_kl(*, when: str, aside: str = "") -> Any:
    """The early stop's threshold; ``when``: the minibatch the check stops at."""
    return setting(
        None,
        valid.positive_or_none,
        f"Stop the update {when} approx_kl exceeds this (none: never).{aside}",
    )


def log_ratio_clamp() -> Any:
    """The guard on log(pi_new / pi_old) before exp()."""
    return setting(
        kl.LOG_RATIO_CLAMP, valid.positive, "Clamp log(pi_new / pi_old) to +- this before exp()."
    )


def ref_kl_loss_coef(*, per: str, aside: str = "") -> Any:
    """The reference KL's weight in the loss; ``per``: what its mean is over."""
    return setting(
        0.0,
        valid.non_negative,
        f"Total loss += this * mean per-{per} KL(pi_theta || pi_ref) (0: off{aside}).",
    )


def ref_kl_loss_estimator(*, what: str) -> Any:
    """The estimator of the reference KL; ``what``: what it estimates besides ref_kl."""
    return setting(
        "low_var_kl", estimator_name, f"Estimator of the {what} and of the reported ref_kl."
    )


def ref_kl_target(*, adapts: str, controller: str, bounded: bool = False) -> Any:
    """The adaptive controller's target; ``adapts``: the coefficients it moves."""
    within = f", within [{KL_COEF_MIN:g}, {KL_COEF_MAX:g}]" if bounded else ""
    return setting(
        None,
        valid.positive_or_none,
        f"If set, adapt {adapts} toward this ref_kl ({controller}){within}.",
    )


def ref_kl_horizon(*, steps: str, aside: str = "") -> Any:
    """The controller's horizon; ``steps``: what it counts."""
    return setting(
        10_000,
        valid.integer(1),
        f"{steps} over which the controller closes a 20% error{aside}.",
    )
