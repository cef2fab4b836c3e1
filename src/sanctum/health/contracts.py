"""Range contracts: values a correct trainer cannot log, flagged as a logging bug.

A clip fraction is a fraction, a variance is not negative, the k3 KL estimator is never
below zero, an entropy of a categorical policy is not negative, and an update index only
moves forward. A value outside its possible range is not data about the policy: it says
the numbers themselves are wrong (a sign error, a wrong reduction, a stale counter), so
it is critical at once and shown as what it is, never plotted as if it were a reading.
Non-finite values are not range violations: the health rules flag them on their own.
The bounds are the contract's own: the ``min``/``max`` of each field's definition in
``telemetry.events``, read here, never listed a second time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import le, lt
from typing import Final, cast

from msgspec import UNSET

from sanctum.formatting import integer_text
from sanctum.metrics import PPO_METRICS
from telemetry.events import KLMeasure, PPOUpdatePayload, field_docs
from telemetry.run_config import KL_ESTIMATOR, RunConfig
from telemetry.schema import range_text

TOLERANCE: Final = 1e-6
"""Float32 rounding allowed past a bound (a k3 mean of 1e-12 may round to -1e-13)."""


@dataclass(frozen=True, slots=True)
class Contract:
    """``metric`` must lie in [``low``, ``high``] (None: unbounded on that side)."""

    metric: str
    low: float | None
    high: float | None
    what: str
    """What the bound means, for the message: ``a fraction``, ``a norm``..."""

    def violated_by(self, value: float) -> bool:
        """Whether a finite ``value`` is out of range (by more than the tolerance)."""
        return (self.low is not None and value < self.low - TOLERANCE) or (
            self.high is not None and value > self.high + TOLERANCE
        )

    def breached_by(self, low: float, high: float) -> bool:
        """Whether a column whose finite values span [``low``, ``high``] breaks it."""
        return self.violated_by(low) or self.violated_by(high)

    def bounds(self) -> str:
        """``[0, 1]``, ``>= 0`` or ``<= 1``."""
        return range_text(self.low, self.high)


_DEFINED: Final = {d.name: d for d in field_docs(PPOUpdatePayload) if d.name in PPO_METRICS}


def _bound(low: float | None, high: float | None) -> str:
    """What a range means when its field does not say: a fraction, or never negative."""
    if low == 0 and high == 1:
        return "a fraction"
    return "never negative" if low == 0 and high is None else "out of range"


def _contracts() -> tuple[Contract, ...]:
    """The ``min``/``max`` of every metric's definition (``telemetry.events``), except
    those whose bound depends on the run's KL estimator (:func:`kl_contracts`)."""
    found = []
    for name, doc in _DEFINED.items():
        low, high = doc.facts.get("min"), doc.facts.get("max")
        if (low is None and high is None) or "estimator" in doc.facts:
            continue
        low = None if low is None else float(low)
        high = None if high is None else float(high)
        found.append(Contract(name, low, high, doc.facts.get("bound") or _bound(low, high)))
    return tuple(found)


CONTRACTS: Final = _contracts()
"""Bounds that hold for every trainer, whatever its settings, read from the contract. The
learning rate has none: SB3 with RL Zoo's ``lin_`` schedules runs its last update at a
slightly negative rate (the last rollout overshoots ``total_timesteps``)."""

_BOUNDS: Final = {c.metric: (c.low, c.high) for c in CONTRACTS}


def bounds_of(metric: str) -> tuple[float | None, float | None]:
    """What ``metric`` can be, (lowest, highest), from its contract (None: unbounded on
    that side; the KL fields, bounded by the run's estimator, are unbounded here): a chart
    of it never reaches past them (explained variance is at most 1)."""
    return _BOUNDS.get(metric, (None, None))


KL_FIELDS: Final = {
    setting: tuple(name for name, d in _DEFINED.items() if d.facts.get("estimator") == setting)
    for setting in dict.fromkeys(
        d.facts["estimator"] for d in _DEFINED.values() if "estimator" in d.facts
    )
}
"""The KL fields each estimator setting measures (the ``estimator`` of their definition):
never below their ``min`` unless the log's ``run_started.config`` names a signed estimator."""
SIGNED_KL_ESTIMATORS: Final = frozenset({"k1", "k1+"})
"""k1 = -log r is negative for some samples, and so can be a mean of a few."""


ASSUMED_ESTIMATOR: Final = {KL_ESTIMATOR: "k3"}
"""What a log that names no estimator is taken to use: approx_kl is k3 (what
Stable-Baselines3 and CleanRL log); the reference-KL fields are left unbounded."""


def _kl_bound(setting: str, name: str) -> str:
    """Why a KL field is never negative, and the fix when the log's estimator is signed."""
    return (
        f"the {name} KL estimator is never negative; if this log's is signed, declare it: "
        f'{setting} = "k1" in run_started.config, or in the import map'
    )


def kl_contracts(
    config: Mapping[str, object], declared: Mapping[str, KLMeasure] | None = None
) -> tuple[Contract, ...]:
    """The KL bounds for a run's ``run_started.config`` and ``run_started.kl``: a field is
    never negative when its estimator is known and not signed. What ``kl`` declares for a
    field (schema 1.5: verl's ``actor/ppo_kl`` is k1) wins over the config's setting. A
    setting that is not a name (a number, a list, an object: a log may hold anything) names
    no estimator: it counts as absent."""
    declared = declared or {}
    return tuple(
        Contract(metric, float(_DEFINED[metric].facts["min"]), None, _kl_bound(setting, name))
        for setting, metrics in KL_FIELDS.items()
        for metric in metrics
        if (
            name := declared[metric].estimator.lower()
            if metric in declared
            else estimator_named(config, setting)
        )
        is not None
        and name not in SIGNED_KL_ESTIMATORS
    )


def estimator_named(config: Mapping[str, object], setting: str) -> str | None:
    """The estimator ``config`` names for ``setting`` (:data:`ASSUMED_ESTIMATOR` when it
    names none; None: unbounded, as an explicit ``null`` says)."""
    name = getattr(RunConfig.from_config(config), setting, UNSET)  # its fields: the keys
    return ASSUMED_ESTIMATOR.get(setting) if name is UNSET else name


@dataclass(frozen=True, slots=True)
class Violation:
    """One impossible value: where and why."""

    update: int
    message: str


def check_column(
    contract: Contract, updates: Sequence[int], values: Sequence[float | None]
) -> list[Violation]:
    """The violations of ``contract`` in one column (called for a column whose extremes
    already break it: the common clean column costs nothing here)."""
    return [
        Violation(
            u, f"{contract.metric} {number_text(v)} outside {contract.bounds()} ({contract.what})"
        )
        for u, v in zip(updates, values, strict=True)
        if v is not None and math.isfinite(v) and contract.violated_by(v)
    ]


def number_text(value: float) -> str:
    """``value`` in six significant digits; an integer exactly, or by its size when it is
    too long to read (:func:`~sanctum.formatting.integer_text`)."""
    if type(value) is int:
        return integer_text(value)
    return f"{value:.6g}"


def check_entropy(
    updates: Sequence[int],
    entropy: Sequence[float | None],
    normalized: Sequence[float | None],
) -> list[Violation]:
    """A categorical policy (one that reports ``entropy_normalized``) has entropy >= 0."""
    try:  # the least finite value, unless the first is NaN (then the loop decides)
        if min(cast("Sequence[float]", entropy)) >= -TOLERANCE:
            return []
    except (TypeError, ValueError):  # a None (not measured), or no updates: the loop
        pass
    return [
        Violation(u, f"entropy {h:.6g} < 0 for a categorical policy (never negative)")
        for u, h, n in zip(updates, entropy, normalized, strict=True)
        if h is not None and n is not None and math.isfinite(h) and h < -TOLERANCE
    ]


def check_steps(
    previous: int | None, updates: Sequence[int], steps: Sequence[int]
) -> list[Violation]:
    """``global_step`` of successive updates never decreases; ``previous`` is the last."""
    if steps and steps[0] >= max(0, previous or 0) and never_down(steps):
        return []  # the common column: two C-speed passes
    found = []
    for update, step in zip(updates, steps, strict=True):
        if step < 0 or (previous is not None and step < previous):
            after = "" if previous is None or step < 0 else f" after {previous}"
            found.append(Violation(update, f"global_step {step}{after}: went backwards"))
        previous = step if previous is None else max(previous, step)
    return found


def check_kl_max(
    updates: Sequence[int], mean: Sequence[float | None], largest: Sequence[float | None]
) -> list[Violation]:
    """``approx_kl`` is a mean of minibatch KLs, ``approx_kl_max`` the largest of them (the
    contract's definitions): a mean above its maximum is two numbers that cannot both be
    right, and a KL spike written into only one of them is not a reading to judge."""
    try:  # none above (a NaN: the loop decides; a None: TypeError, the loop too)
        if all(map(le, cast("Sequence[float]", mean), cast("Sequence[float]", largest))):
            return []
    except TypeError:
        pass
    return [
        Violation(u, f"approx_kl {m:.6g} above approx_kl_max {x:.6g}: a mean above its maximum")
        for u, m, x in zip(updates, mean, largest, strict=True)
        if m is not None
        and x is not None
        and math.isfinite(m)
        and math.isfinite(x)
        and m > x + TOLERANCE * max(1.0, abs(x))
    ]


FROZEN_UPDATES: Final = 3
"""Updates in a row with a gradient norm and a KL of exactly 0 that make a frozen run."""


def check_frozen(
    streak: int,
    updates: Sequence[int],
    grad_norm: Sequence[float | None],
    kl: Sequence[float | None],
) -> tuple[list[Violation], int]:
    """Updates that changed nothing: a pre-clip gradient norm and a KL to the old policy
    both exactly 0, from the :data:`FROZEN_UPDATES`-th such update in a row on (a working
    PPO update always has a gradient; a trainer that logs a placeholder 0 for the norm
    still moves its policy). ``streak``: such updates just before these; returns the
    violations and the streak after them."""
    if 0.0 not in grad_norm:  # the common column: one C-speed scan
        return [], 0
    found = []
    for update, g, k in zip(updates, grad_norm, kl, strict=True):
        streak = streak + 1 if g == 0.0 and k == 0.0 else 0
        if streak >= FROZEN_UPDATES:
            found.append(
                Violation(
                    update,
                    f"grad_norm and the KL 0 for {streak} updates in a row: the update changed "
                    "nothing (no gradient reaches the parameters: a dead network, a detached "
                    "loss, or an optimizer that skips every step)",
                )
            )
    return found, streak


def rising(values: Sequence[float]) -> bool:
    """Whether each value is above the one before it (one C-speed pass)."""
    return all(map(lt, values, islice(values, 1, None)))


def never_down(values: Sequence[float]) -> bool:
    """Whether no value is below the one before it (one C-speed pass; NaN: False)."""
    return all(map(le, values, islice(values, 1, None)))


def check_order(previous: int | None, updates: Sequence[int]) -> list[Violation]:
    """Update indices must be >= 0 and increase; ``previous`` is the last one seen."""
    if updates and updates[0] > (-1 if previous is None else previous) and rising(updates):
        return []  # the common column: one C-speed pass
    found = []
    for update in updates:
        if update < 0:
            found.append(Violation(update, f"update index {update} is negative"))
        elif previous is not None and update <= previous:
            found.append(
                Violation(update, f"update index {update} after {previous}: not increasing")
            )
        previous = update if previous is None else max(previous, update)
    return found
