"""Per-sample KL estimators from the log-probabilities of sampled actions.

For samples a ~ p and another distribution q, with r = q(a|s) / p(a|s), every estimator
below estimates KL(p || q) as a function of log r alone: PPO's approx_kl is KL(pi_old ||
pi_new) on the rollout's samples (p = pi_old); the reference KL is KL(pi_theta || pi_ref)
on the same samples (p = pi_theta, the policy that drew them). Peers disagree on which
estimator "approx_kl" means; here the config names it and the run_started event records
it. The log-ratio is guarded before any exp(): non-finite entries are replaced (and
counted by the caller) and the rest clamped, so one wild sample cannot turn the whole
statistic into inf.

The estimators are registered by name (:func:`register`, as verl's ``core_algos``
registers its advantage estimators and policy losses): :data:`ESTIMATORS`, the names the
config accepts, is derived from the registry, never listed by hand.

A name ending in ``+`` is straight-through (verl's ``k3+``, ``low_var_kl+``): its value is
the base estimator's, its gradient that of k2 = (log r)^2 / 2, whose gradient is the
unbiased gradient of the KL. So a loss term can report k3 and still be optimised with
the right gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeAlias

if TYPE_CHECKING:  # tensor methods only: the config reads the names without loading torch
    from torch import Tensor

KLEstimator: TypeAlias = str
"""The name of a per-sample KL estimator: one of :data:`ESTIMATORS`."""
KLFunction: TypeAlias = "Callable[[Tensor], Tensor]"
"""A base estimator: per-sample KL(p || q) from a guarded log r = log q - log p."""

STRAIGHT_THROUGH: Final = "+"
"""The suffix of a straight-through estimator."""
LOW_VAR_KL_BOUND: Final = 10.0
"""verl's ``low_var_kl`` clamps k3 to [-10, 10] per sample."""

_REGISTRY: dict[str, KLFunction] = {}


def register(name: str) -> Callable[[KLFunction], KLFunction]:
    """Register a base estimator under ``name``; its ``+`` twin comes with it. Estimators
    are registered here, as this module loads: :data:`ESTIMATORS` is derived once, below."""

    def add(fn: KLFunction) -> KLFunction:
        if name in _REGISTRY or name.endswith(STRAIGHT_THROUGH):
            raise ValueError(f"KL estimator {name!r} is already registered or ends in '+'")
        _REGISTRY[name] = fn
        return fn

    return add


# Schulman, "Approximating KL Divergence" (http://joschu.net/blog/kl-approx.html): with
# x ~ p and r = q/p, k1 = -log r is unbiased but high-variance, k2 = (log r)^2 / 2 is biased
# but low-variance, k3 = (r - 1) - log r is unbiased and always >= 0. "abs" (|log r|) is a
# biased magnitude used by some RLHF trainers.


@register("k1")
def k1(log_ratio: Tensor) -> Tensor:
    return -log_ratio


@register("k2")
def k2(log_ratio: Tensor) -> Tensor:
    return 0.5 * log_ratio.square()


@register("k3")
def k3(log_ratio: Tensor) -> Tensor:
    return log_ratio.expm1() - log_ratio


@register("low_var_kl")
def low_var_kl(log_ratio: Tensor) -> Tensor:
    """verl's name for k3 with a per-sample clamp."""
    return k3(log_ratio).clamp(-LOW_VAR_KL_BOUND, LOW_VAR_KL_BOUND)


@register("abs")
def abs_log_ratio(log_ratio: Tensor) -> Tensor:
    return log_ratio.abs()


BASE_ESTIMATORS: Final[tuple[str, ...]] = tuple(_REGISTRY)
"""The registered base estimators, in registration order."""
ESTIMATORS: Final[tuple[str, ...]] = (
    *BASE_ESTIMATORS,
    *(name + STRAIGHT_THROUGH for name in BASE_ESTIMATORS),
)
"""Names accepted by :func:`estimate`: each base estimator, then each straight-through one."""
ESTIMATORS_LISTED: Final = (
    f"{', '.join(BASE_ESTIMATORS)} (each also with '{STRAIGHT_THROUGH}': straight-through)"
)
"""The accepted names as error messages list them."""


LOG_RATIO_CLAMP: Final = 20.0
"""The default bound of a guarded log-ratio (``log_ratio_clamp``): exp(20) ~ 5e8, far past
any ratio the clip lets through, and short of float32's overflow at exp(88)."""


def guarded_log_ratio(
    logp_other: Tensor, logp_sampled: Tensor, clamp: float = LOG_RATIO_CLAMP
) -> tuple[Tensor, Tensor]:
    """log(q / p) clamped to [-clamp, clamp], NaN replaced by 0 (ratio 1).

    Returns the guarded log-ratio and the number of entries that were not finite before
    the guard (a 0-d tensor, kept on the device).
    """
    raw = logp_other - logp_sampled
    nonfinite = (~raw.isfinite()).sum()
    return raw.nan_to_num(nan=0.0).clamp(-clamp, clamp), nonfinite


def estimate_from_log_ratio(log_ratio: Tensor, estimator: KLEstimator) -> Tensor:
    """Per-sample KL(p || q) estimate from an already guarded log r = log q - log p."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"kl_estimator must be one of {ESTIMATORS_LISTED}, got {estimator!r}")
    if estimator.endswith(STRAIGHT_THROUGH):
        base = _REGISTRY[estimator[: -len(STRAIGHT_THROUGH)]]
        forward = base(log_ratio).detach()
        squared = k2(log_ratio)
        return squared - squared.detach() + forward  # the value of the base, the gradient of k2
    return _REGISTRY[estimator](log_ratio)


def estimate(
    logp_other: Tensor,
    logp_sampled: Tensor,
    estimator: KLEstimator,
    clamp: float = LOG_RATIO_CLAMP,
) -> Tensor:
    """Per-sample estimate of KL(p_sampled || p_other), for actions drawn from p_sampled:
    the second argument is the distribution the samples came from. The log-ratio is
    guarded first."""
    log_ratio, _ = guarded_log_ratio(logp_other, logp_sampled, clamp)
    return estimate_from_log_ratio(log_ratio, estimator)
