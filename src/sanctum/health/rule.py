"""A health rule: what it judges of one metric, its lines, and its checks on itself.

A rule judges a *statistic* of its metric: the value itself, the rolling median of the
last ``window`` judged values (for noisy metrics such as explained variance), or the jump
of the value over the median of the ``window`` values before it (for metrics whose scale
is the run's own, such as the pre-clip gradient norm). A level fires only once it held for
``persist`` consecutive judged updates, except past ``far``, where critical fires at once.

A rule refuses to exist when it is unusable: :class:`ThresholdsError` names the key (a
thresholds file's loader adds the file and the table). Non-finite values are critical for
every metric regardless of any rule (see ``health``). The table of rules in force is
:class:`~sanctum.health.thresholds.Thresholds`; the calibrated rules are in
:mod:`sanctum.health.calibrated`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import truediv
from types import MappingProxyType
from typing import Final, Literal, cast

from sanctum.formatting import NOT_MEASURED, format_ratio, format_value, visible
from sanctum.metrics import PPO_METRICS

Direction = Literal["above", "below"]
Statistic = Literal["value", "median", "jump", "shift", "start", "split", "high"]
STATISTICS: Final[tuple[str, ...]] = (
    "value", "median", "jump", "shift", "start", "split", "high"
)  # fmt: skip

SAME_CONCEPT: Final[Mapping[str, str]] = MappingProxyType(
    {
        "completion_truncated_frac": "max_length_rate",
        "clip_fraction": "clip_fraction_region",
        "approx_kl": "kl_final",
    }
)
"""A rule's metric -> the field that measures the same thing in runs that lack it: the rule
reads the other where its own is absent (one concept, one rule). Our token trainer's
``max_length_rate`` is the truncated share; verl's ``pg_clipfrac`` and TRL's
``clip_ratio/region_mean`` are the share clipped on either side. ``kl_final`` is
KL(pi_old || pi_new) after the update's last step, where ``approx_kl`` is measured before
each step: what a probe measures from outside a trainer that logs no KL
(``torchprobe.probe``); it is the larger of the two on an update that moved."""


class ThresholdsError(ValueError):
    """A thresholds file (or rule) is unusable; the message names file, table and key."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A metric is at warning past ``warning`` and critical past ``critical``.

    ``above``: worse when larger (strictly greater than the threshold fires); ``below``:
    worse when smaller (strictly less fires). A value exactly at a threshold is not past it.
    During the first ``warmup_updates`` updates (0-based index below it) the rule does not
    judge: the level is pending.
    """

    metric: str
    """Field of PPOUpdatePayload the rule reads."""
    label: str
    """Short name for banners and verdicts, e.g. ``KL``."""
    direction: Direction
    """``above`` or ``below``: which way is worse."""
    warning: float
    """Past this (strictly) the metric is at warning."""
    critical: float | None
    """Past this (strictly) the metric is critical. None (``critical = false`` in a
    thresholds file): the rule only warns, it never fails a run."""
    warmup_updates: int = 0
    """Updates with a 0-based index below this are not judged (pending)."""
    decimals: int = 3
    """Decimals to show values of this metric with."""
    statistic: Statistic = "value"
    """What is judged: the ``value``; the ``median`` of the last ``window`` judged values;
    the ``jump``, the value over the median of the ``window`` measured values before it; or
    the ``shift``, how far the value lies from that median, either way, in the metric's
    units (``abs(value - median)``); or the value relative to the ``start``, the median of
    the run's first ``window`` measured values (a gradual fall that no jump shows); or the
    ``split`` of the update's ``reward_components``: over the last ``window`` updates, how far
    one component rose while another fell (the smaller of the two moves, each the median of
    the later half of the window less that of the earlier half), in reward units; or the
    ``high``: the value over the largest the run measured before it, judged once ``window``
    values were measured (a new high by orders of magnitude: a loss whose healthy values
    swing by orders of magnitude from one update to the next, as a converged critic's do,
    still never goes far past its own record)."""
    window: int = 1
    """Updates in the rolling statistic (``median`` and ``jump``)."""
    persist: int = 1
    """Consecutive judged updates a level must hold before it fires."""
    far: float | None = None
    """Past this, the rule fires critical at once, whatever ``persist`` says."""
    min_return_spread: float | None = None
    """Judge only updates whose ``return_std`` is at least this share of ``|return_mean|``
    (when the update reports both): explained variance is noise when returns barely vary."""
    min_baseline: float | None = None
    """A jump is judged only while the median it is measured against is at least this: a
    policy whose normalised entropy already sits near 0 (MountainCar converging to a
    deterministic policy) has nothing left to collapse, and its dips are noise."""
    floor: float | None = None
    """A ``below`` jump rule's line in the metric's own units: a value under it is judged as
    itself wherever no jump is (no baseline yet, or one under ``min_baseline``), so a
    policy that collapsed in its first updates, before any healthy baseline formed, still
    fires. For a metric in [0, 1] such as normalised entropy the value is its share of the
    maximum (under 1e-5: deterministic to float precision)."""
    only_when_measured: bool = False
    """The metric exists only in some runs (a reference KL only when fine-tuning): the
    dashboard shows its row only in runs that measure it."""
    per: str | None = None
    """Judge the metric per unit of this other metric of the same update: value /
    max(other, ``per_floor``) (an absent other counts as ``per_floor``). The KL rule judges
    approx_kl per clip fraction: a policy that moves far while the clip bounds almost
    nothing is PPO's trust region gone, whatever the run's healthy KL is."""
    per_floor: float = 0.01
    """The smallest divisor ``per`` uses (a clip fraction of 0 counts as this)."""
    per_required: bool = False
    """An update without the ``per`` metric is not judged (a KL summed over a response's
    tokens says nothing per token without the response's length). No effect without ``per``."""
    span: int = 1
    """Judge the largest of the last ``span`` measured values: a critic-free run optimised
    ``span`` times per batch measures its ratio at 1 on the first pass of each batch, so
    only one update in ``span`` can show what the batch did."""
    rise_with: str | None = None
    """Critical only while this is the policy being paid for it: the rule's median rose at
    least ``rise`` above its lowest median so far, and the median of this other metric
    (over the same window) rose above what it was then. Otherwise the rule warns, and only
    after ``warmup_updates`` (which holds back only that warning: a confirmed rise is
    judged from the first median)."""
    rise: float = 0.25
    """How far above its lowest median the rule's median must have risen (``rise_with``)."""
    lost: bool = False
    """Once the metric was measured, ``span`` updates in a row without it are non-finite
    (critical): a reward that vanishes mid-run (TRL logs a NaN reward as no reward) is a
    fault, not a gap in the log."""

    def __post_init__(self) -> None:
        problem = _rule_problem(self)
        if problem is not None:
            key, message = problem
            raise ThresholdsError(f"[{self.metric}] {key}: {message}")

    def is_worse(self, value: float, than: float) -> bool:
        """Whether ``value`` is strictly worse than ``than`` in this rule's direction."""
        return self.worse_than(than)(value)

    def worse_than(self, than: float) -> Callable[[float], bool]:
        """A predicate: is a value strictly worse than ``than``? The one place the direction
        is read. It is a bound float comparison, so a scan can call it per value at C speed;
        NaN is never worse (comparisons with NaN are false: check finiteness first)."""
        bound = float(than)  # int.__lt__(float) would return NotImplemented, which is truthy
        return bound.__lt__ if self.direction == "above" else bound.__gt__

    def worst_of(self, values: Sequence[float]) -> float:
        """The worst of finite ``values`` (the largest for ``above``, smallest for ``below``)."""
        return max(values) if self.direction == "above" else min(values)

    @property
    def in_metric_units(self) -> bool:
        """Whether the lines are in the metric's own units (not a jump's ratio, not a
        quantity per another metric), so a chart of the metric can draw them."""
        return self.statistic in ("value", "median") and self.per is None

    def judged_column(
        self, values: Sequence[float | None], others: Sequence[float | None] | None
    ) -> Sequence[float | None]:
        """What the rule's statistic is computed from: ``values`` themselves, or each per
        unit of ``others`` (see ``per``). Absent and non-finite values stay as they are."""
        if self.per is None:
            return values
        floor, isfinite = self.per_floor, math.isfinite
        others = others if others is not None else [None] * len(values)
        numbers, by = cast("Sequence[float]", values), cast("Sequence[float]", others)
        try:  # every value and every other one finite (a None: TypeError): C-speed passes
            if math.isfinite(sum(numbers)) and math.isfinite(sum(by)):
                return list(map(truediv, numbers, map(max, by, repeat(floor))))
        except TypeError:
            pass
        return [
            v if v is None or not isfinite(v) else v / max(o if o is not None else 0.0, floor)
            for v, o in zip(values, others, strict=True)
        ]

    def format(self, value: float | None, absent: str = NOT_MEASURED) -> str:
        """A judged statistic as text: ``x12.3`` for a jump, ``12.3`` for a quantity per
        another metric, else the value at ``decimals`` (``NaN``/``+Inf`` spelled out; None
        is ``absent``)."""
        if value is not None and math.isfinite(value):
            if self.statistic in ("jump", "high"):
                return f"x{format_value(value, 1)}"
            if self.statistic == "shift":
                return f"±{format_value(value, 2)}"
            if self.per is not None:
                return format_ratio(value)
        return format_value(value, self.decimals, absent)

    @property
    def sign(self) -> str:
        """``>`` for a rule whose lines are crossed from below, ``<`` from above."""
        return ">" if self.direction == "above" else "<"

    def describe(self) -> str:
        """The rule in words, for tables and help, e.g. ``approx_kl > 0.02 / > 0.05, 2
        updates in a row (at once past 0.15)``."""
        sign = self.sign
        unit = "x" if self.statistic in ("jump", "high") else ""
        measure = self.metric
        if self.per is not None:
            measure = f"{self.metric} / {self.per} (at least {self.per_floor:g})"
        if self.span > 1:
            measure = f"max of each {self.span} {measure}"
        if self.statistic == "jump":
            subject = f"{measure} / median of previous {self.window}"
        elif self.statistic == "shift":
            subject = f"|{measure} - median of previous {self.window}|"
        elif self.statistic == "split":
            subject = f"reward_components: one rising while another falls, over {self.window}"
        elif self.statistic == "start":
            subject = f"{measure} / median of the run's first {self.window}"
        elif self.statistic == "high":
            subject = f"{measure} / largest before it (after {self.window})"
        else:
            subject = measure
            if self.statistic == "median":
                subject = f"median of {self.window} {measure}"
        bands = f"{sign} {self.warning:g}{unit} (warns only)"
        if self.critical is not None:
            bands = f"{sign} {self.warning:g}{unit} / {sign} {self.critical:g}{unit}"
        text = f"{subject} {bands}"
        if self.persist > 1:
            text += f", {self.persist} updates in a row"
        if self.far is not None:
            text += f" (at once {'past' if self.direction == 'above' else 'below'} {self.far:g})"
        if self.warmup_updates and self.rise_with is None:
            text += f", after {self.warmup_updates} updates"
        if self.min_return_spread is not None:
            text += ", when returns vary"
        if self.min_baseline is not None:
            text += f", while the median is at least {self.min_baseline:g}"
        if self.floor is not None:
            text += f"; without a jump to judge, a value under {self.floor:g} is judged as itself"
        if self.lost:
            text += f"; {self.metric} missing once measured is critical"
        if self.per_required and self.per is not None:
            text += f", only with {self.per}"
        if self.rise_with is not None:
            text += (
                f"; critical only after a rise of {self.rise:g} from its lowest median "
                f"while the median {self.rise_with} rose; without it, warns after "
                f"{self.warmup_updates} updates"
            )
        return text


def _rule_problem(rule: Rule) -> tuple[str, str] | None:
    """The first (key, problem) that makes ``rule`` unusable, or None."""
    if rule.metric not in PPO_METRICS:
        return "metric", f"unknown metric {rule.metric!r}"
    if rule.direction not in ("above", "below"):
        return "direction", f"must be 'above' or 'below', got {rule.direction!r}"
    for key in ("warning", "critical"):
        value = getattr(rule, key)
        if key == "critical" and value is None:
            continue
        if not is_number(value) or not math.isfinite(value):
            hint = " (or false: the rule only warns)" if key == "critical" else ""
            return key, f"must be a finite number{hint}, got {value!r}"
    if rule.critical is not None and rule.is_worse(rule.warning, rule.critical):
        relation = "above" if rule.direction == "above" else "below"
        return "warning", (
            f"warning {rule.warning:g} is {relation} critical {rule.critical:g}; "
            f"for a rule that fires {rule.direction} its thresholds, warning comes first"
        )
    if not is_int(rule.warmup_updates) or rule.warmup_updates < 0:
        return "warmup_updates", f"must be an integer >= 0, got {rule.warmup_updates!r}"
    if not is_int(rule.decimals) or not 0 <= rule.decimals <= 12:
        return "decimals", f"must be an integer from 0 to 12, got {rule.decimals!r}"
    return _statistic_problem(rule)


def _statistic_problem(rule: Rule) -> tuple[str, str] | None:
    """The first problem with the statistic, persistence and gate keys, or None."""
    if rule.statistic not in STATISTICS:
        return "statistic", f"must be one of {', '.join(STATISTICS)}, got {rule.statistic!r}"
    for key in ("window", "persist"):
        value = getattr(rule, key)
        if not is_int(value) or value < 1:
            return key, f"must be an integer >= 1, got {value!r}"
    if rule.statistic != "value" and rule.window < 2:
        return "window", f"a {rule.statistic} needs a window of at least 2, got {rule.window!r}"
    if rule.far is not None and rule.critical is None:
        return "far", "needs a critical line (the rule only warns: critical = false)"
    if rule.far is not None and (
        not is_number(rule.far)
        or not math.isfinite(rule.far)
        or rule.is_worse(rule.critical, rule.far)  # type: ignore[arg-type]
    ):
        return (
            "far",
            f"must be a finite number at or past critical {rule.critical:g}, got {rule.far!r}",
        )
    low = rule.min_baseline
    if low is not None and (
        rule.statistic != "jump" or not is_number(low) or not 0 < low < math.inf
    ):
        return "min_baseline", f"needs statistic = 'jump' and a finite number > 0, got {low!r}"
    floor = rule.floor
    if floor is not None and (
        rule.statistic != "jump"
        or rule.direction != "below"
        or not is_number(floor)
        or not 0 < floor < math.inf
    ):
        return "floor", (
            f"needs statistic = 'jump', direction = 'below' and a finite number > 0, got {floor!r}"
        )
    spread = rule.min_return_spread
    if spread is not None and (not is_number(spread) or not 0 <= spread < math.inf):
        return "min_return_spread", f"must be a finite number >= 0, got {spread!r}"
    if not isinstance(rule.label, str) or not rule.label or visible(rule.label) != rule.label:
        return "label", f"must be a non-empty string of visible characters, got {rule.label!r}"
    if not isinstance(rule.only_when_measured, bool):
        return "only_when_measured", f"must be true or false, got {rule.only_when_measured!r}"
    if rule.per is not None and (rule.per not in PPO_METRICS or rule.per == rule.metric):
        return "per", f"must name another ppo_update metric, got {rule.per!r}"
    if not is_number(rule.per_floor) or not 0 < rule.per_floor < math.inf:
        return "per_floor", f"must be a finite number > 0, got {rule.per_floor!r}"
    return _run_problem(rule)


def _run_problem(rule: Rule) -> tuple[str, str] | None:
    """The first problem with the keys that fit a rule to a kind of run, or None."""
    if not isinstance(rule.lost, bool):
        return "lost", f"must be true or false, got {rule.lost!r}"
    if not isinstance(rule.per_required, bool):
        return "per_required", f"must be true or false, got {rule.per_required!r}"
    if not is_int(rule.span) or rule.span < 1:
        return "span", f"must be an integer >= 1, got {rule.span!r}"
    if rule.rise_with is not None and (
        rule.rise_with not in PPO_METRICS
        or rule.rise_with == rule.metric
        or rule.statistic != "median"
    ):
        return "rise_with", (
            f"must name another ppo_update metric, on a median rule, got {rule.rise_with!r}"
        )
    if not is_number(rule.rise) or not 0 <= rule.rise < math.inf:
        return "rise", f"must be a finite number >= 0, got {rule.rise!r}"
    return None


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
