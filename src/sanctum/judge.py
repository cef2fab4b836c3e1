"""Every update judged against the rule table, in order, with memory: the one judgement.

A rule's level at an update can depend on the updates before it: a rolling median, a
jump over the recent median, a level that must persist for several updates. So judging is
a fold: :class:`RuleJudge` keeps, per rule, the window of recent values, the streaks,
the tallies ``sanctum check`` reports (updates measured, judged, at each level, the first
of each, the worst statistic) and the latest :class:`Judgement`, which the dashboard
shows. :class:`HealthJudge` runs every rule, the non-finite rule and the range contracts
over a batch of updates. The aggregator owns one, so the dashboard, ``check`` and
``summary`` read the same judgement of the same updates.

A healthy batch costs a few C-speed passes per plain rule (``min``/``max``/``sum`` over a
column); only values past a warning line, non-finite values, rolling statistics and
running streaks go through the per-update path.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from sanctum import contracts
from sanctum.health import Level, level_of, unruled_level
from sanctum.metrics import FLOAT_METRICS, PPO_METRICS
from sanctum.thresholds import Rule, Thresholds

JUMP_BASELINE: Final = 3
"""A jump is judged once this many values make the median it is measured against."""


def values_needed(rule: Rule) -> int:
    """Values a rolling statistic needs before it judges: a jump's baseline, or half the
    window for a median (a median of one or two values is no smoother than the value)."""
    return JUMP_BASELINE if rule.statistic == "jump" else (rule.window + 1) // 2


RETURNS_FLAT: Final = "not judged: returns nearly constant"
WARMUP: Final = "warm-up"


@dataclass(frozen=True, slots=True)
class Judgement:
    """How a rule judged one update."""

    update: int
    value: float | None
    """The metric's value (None: not measured)."""
    statistic: float | None
    """What the rule judged: the value, its rolling median, or its jump over the median."""
    band: Level
    """The level by the warning and critical lines alone."""
    level: Level
    """The rule's level: the band once it persisted (or past ``far``; non-finite at once)."""
    note: str | None = None
    """Why it is pending (``warm-up``, ``baseline 1/3``, ``not judged: returns nearly
    constant``), or a band not yet persisted (``crit 1/2``: one update of two past the
    critical line)."""


@dataclass(frozen=True, slots=True)
class RuleTally:
    """How one rule judged the run so far: what ``check`` and ``summary`` report."""

    rule: Rule
    measured: int
    """Updates that carried a value (finite or not)."""
    judged: int
    """Updates whose statistic was judged (not pending)."""
    at_warning: int
    at_critical: int
    first_warning: int | None
    first_critical: int | None
    worst: float | None
    """Worst statistic judged; a non-finite value is worse than any number."""
    worst_update: int | None

    def reached(self, level: Level) -> int:
        """Updates at ``level`` or worse (WARNING or CRITICAL)."""
        return self.at_critical + (self.at_warning if level is Level.WARNING else 0)


class RollingWindow:
    """The last ``size`` values, kept in arrival order and sorted (for the median)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._order: deque[float] = deque()
        self._sorted: list[float] = []

    def __len__(self) -> int:
        return len(self._order)

    def push(self, value: float) -> None:
        if len(self._order) == self.size:
            oldest = self._order.popleft()
            del self._sorted[bisect_left(self._sorted, oldest)]
        self._order.append(value)
        insort(self._sorted, value)

    def median(self) -> float:
        values, n = self._sorted, len(self._sorted)
        mid = n // 2
        return values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2


def measured(values: Sequence[float | None]) -> tuple[Sequence[float], float]:
    """The measured values of a column and their sum: one C-speed pass when none is None.
    The sum is non-finite iff a value is (or the sum overflowed)."""
    complete = cast("Sequence[float]", values)
    try:
        return complete, sum(complete)
    except TypeError:  # a None (not measured) among them
        numbers = [v for v in values if v is not None]
        return numbers, sum(numbers)


class RuleJudge:
    """One rule over the updates of a run: its window, streaks, tallies and latest verdict."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.window = RollingWindow(rule.window) if rule.statistic != "value" else None
        self._need = values_needed(rule)
        self.streak_warning = 0
        self.streak_critical = 0
        self.measured = 0
        """Updates that carried a value (finite or not)."""
        self.judged = 0
        """Updates whose statistic was judged (not pending)."""
        self.at_warning = 0
        self.at_critical = 0
        self.first_warning: int | None = None
        self.first_critical: int | None = None
        self.worst: float | None = None
        """Worst statistic judged; a non-finite value is worse than any number."""
        self.worst_update: int | None = None
        self.latest: Judgement | None = None

    @property
    def tally(self) -> RuleTally:
        """The counts so far, frozen."""
        return RuleTally(
            self.rule,
            self.measured,
            self.judged,
            self.at_warning,
            self.at_critical,
            self.first_warning,
            self.first_critical,
            self.worst,
            self.worst_update,
        )

    def fold(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        judgeable: Sequence[bool] | None = None,
    ) -> None:
        """Judge a column of values, in update order. ``judgeable[i]`` False: the update
        fails the rule's gate (returns nearly constant) and is not judged."""
        if not values:
            return
        if judgeable is None and self._fold_healthy(updates, values):
            return
        for i, value in enumerate(values):
            ok = True if judgeable is None else judgeable[i]
            self.latest = self._judge(updates[i], value, ok)

    def _fold_healthy(self, updates: Sequence[int], values: Sequence[float | None]) -> bool:
        """The common case in a few C-speed passes: a plain rule, no streak running, every
        value measured, finite, past the warm-up and inside the warning line."""
        rule = self.rule
        if self.window is not None or self.streak_warning or updates[0] < rule.warmup_updates:
            return False
        numbers, total = measured(values)
        if len(numbers) != len(values) or not math.isfinite(total):
            return False
        worst = rule.worst_of(numbers)
        if rule.is_worse(worst, rule.warning):
            return False
        self.measured += len(values)
        self.judged += len(values)
        self._offer(worst, updates[numbers.index(worst)])
        last = values[-1]
        self.latest = Judgement(updates[-1], last, last, Level.HEALTHY, Level.HEALTHY)
        return True

    def _judge(self, update: int, value: float | None, judgeable: bool) -> Judgement:
        rule = self.rule
        if value is None:
            return Judgement(update, None, None, Level.PENDING, Level.PENDING)
        self.measured += 1
        if not math.isfinite(value):  # critical at once, even in the warm-up
            self._streak(Level.CRITICAL)
            self._count(Level.CRITICAL, update, value)
            return Judgement(update, value, value, Level.CRITICAL, Level.CRITICAL)
        if update < rule.warmup_updates:
            return Judgement(update, value, None, Level.PENDING, Level.PENDING, WARMUP)
        if not judgeable:
            return Judgement(update, value, None, Level.PENDING, Level.PENDING, RETURNS_FLAT)
        statistic = self._statistic(value)
        if statistic is None:  # the window is still filling
            need = f"{len(self.window or ())}/{self._need}"
            what = "median" if rule.statistic == "median" else "baseline"
            return Judgement(update, value, None, Level.PENDING, Level.PENDING, f"{what} {need}")
        band = level_of(rule, statistic, update)
        self._streak(band)
        level = self._persisted(band, statistic)
        self._count(level, update, statistic)
        note = None
        if level is not band:  # past a line, not for long enough yet: ``crit 1/2``
            note = f"{band.value[:4]} {self._streak_of(band)}/{rule.persist}"
        if self.window is not None and rule.statistic == "jump" and band is not Level.CRITICAL:
            self.window.push(value)  # a jump is measured against the last sound baseline
        return Judgement(update, value, statistic, band, level, note)

    def _statistic(self, value: float) -> float | None:
        """The value, the median including it, or its ratio to the median before it."""
        window = self.window
        if window is None:
            return value
        if self.rule.statistic == "median":
            window.push(value)
            return window.median() if len(window) >= self._need else None
        if len(window) < self._need:
            window.push(value)
            return None
        baseline = window.median()
        if baseline <= 0:
            return None
        return value / baseline

    def _streak(self, band: Level) -> None:
        self.streak_warning = self.streak_warning + 1 if band >= Level.WARNING else 0
        self.streak_critical = self.streak_critical + 1 if band >= Level.CRITICAL else 0

    def _streak_of(self, band: Level) -> int:
        return self.streak_critical if band is Level.CRITICAL else self.streak_warning

    def _persisted(self, band: Level, statistic: float) -> Level:
        rule = self.rule
        if band is Level.CRITICAL and rule.far is not None and rule.is_worse(statistic, rule.far):
            return Level.CRITICAL  # past far: no waiting
        if self.streak_critical >= rule.persist:
            return Level.CRITICAL
        if self.streak_warning >= rule.persist:
            return Level.WARNING
        return Level.HEALTHY

    def _count(self, level: Level, update: int, statistic: float) -> None:
        self.judged += 1
        if level is Level.CRITICAL:
            self.at_critical += 1
            if self.first_critical is None:
                self.first_critical = update
        elif level is Level.WARNING:
            self.at_warning += 1
            if self.first_warning is None:
                self.first_warning = update
        self._offer(statistic, update)

    def _offer(self, value: float, update: int) -> None:
        worst = self.worst
        if worst is None or (
            math.isfinite(worst) and (not math.isfinite(value) or self.rule.is_worse(value, worst))
        ):
            self.worst, self.worst_update = value, update


@dataclass
class MetricStats:
    """Final, smallest and largest value of one metric over the run; non-finite counted."""

    measured: int = 0
    nonfinite: int = 0
    first_nonfinite: int | None = None
    final: float | None = None
    final_update: int | None = None
    minimum: float | None = None
    maximum: float | None = None

    def fold(
        self, updates: Sequence[int], values: Sequence[float | None], floats: bool
    ) -> list[int]:
        """Fold a column; ``floats``: the metric can be non-finite (integers cannot).
        Returns the updates whose value was non-finite."""
        numbers, total = measured(values)
        if not numbers:
            return []
        self.measured += len(numbers)
        last = len(values) - 1
        while values[last] is None:
            last -= 1
        self.final, self.final_update = values[last], updates[last]
        bad: list[int] = []
        if floats and not math.isfinite(total):  # the sum is NaN/Inf iff a value is (or overflow)
            bad = [
                u
                for u, v in zip(updates, values, strict=True)
                if v is not None and not math.isfinite(v)
            ]
            self.nonfinite += len(bad)
            if bad and self.first_nonfinite is None:
                self.first_nonfinite = bad[0]
            numbers = [v for v in numbers if math.isfinite(v)]
        if numbers:
            low, high = min(numbers), max(numbers)
            self.minimum = low if self.minimum is None else min(self.minimum, low)
            self.maximum = high if self.maximum is None else max(self.maximum, high)
        return bad


class HealthJudge:
    """Every rule, the non-finite rule and the range contracts over one run's updates."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds
        self.rules = {rule.metric: RuleJudge(rule) for rule in thresholds.rules}
        self.contracts = contracts.CONTRACTS + contracts.kl_contracts({})
        self.stats = {metric: MetricStats() for metric in PPO_METRICS}
        """Final, smallest, largest and non-finite values of every metric."""
        self.nonfinite_updates = 0
        self.first_nonfinite_update: int | None = None
        self.violations = 0
        self.first_violation: contracts.Violation | None = None
        self.latest_violations: tuple[contracts.Violation, ...] = ()
        """The range violations of the latest update (what the verdict shows now)."""
        self.last_update: int | None = None
        self.last_step: int | None = None

    def configure(self, config: Mapping[str, object]) -> None:
        """Take the run's ``run_started.config`` into account (the KL estimator it names)."""
        self.contracts = contracts.CONTRACTS + contracts.kl_contracts(config)

    def fold(
        self,
        updates: Sequence[int],
        columns: Mapping[str, Sequence[float | None]],
        steps: Sequence[int] = (),
    ) -> list[contracts.Violation]:
        """Judge a batch of updates (indices, one column per metric, and their
        ``global_step`` when known, in file order); returns the range violations found,
        for the event log."""
        if not updates:
            return []
        for metric, judge in self.rules.items():
            spread = judge.rule.min_return_spread
            gate = None
            if spread is not None:
                gate = returns_vary(columns["return_std"], columns["return_mean"], spread)
            judge.fold(updates, columns[metric], gate)
        self._stats(updates, columns)
        found = self._violations(updates, columns, steps)
        self.last_update = (
            max(updates) if self.last_update is None else max(self.last_update, *updates)
        )
        if steps:
            self.last_step = max(steps) if self.last_step is None else max(self.last_step, *steps)
        return found

    def _stats(self, updates: Sequence[int], columns: Mapping[str, Sequence[float | None]]) -> None:
        bad_updates: set[int] = set()
        for metric, stats in self.stats.items():
            bad_updates.update(stats.fold(updates, columns[metric], metric in FLOAT_METRICS))
        if bad_updates:
            self.nonfinite_updates += len(bad_updates)
            if self.first_nonfinite_update is None:
                self.first_nonfinite_update = min(bad_updates)

    def _violations(
        self,
        updates: Sequence[int],
        columns: Mapping[str, Sequence[float | None]],
        steps: Sequence[int],
    ) -> list[contracts.Violation]:
        found = contracts.check_order(self.last_update, updates)
        if steps:
            found += contracts.check_steps(self.last_step, updates, steps)
        for contract in self.contracts:
            found += contracts.check_column(contract, updates, columns[contract.metric])
        found += contracts.check_entropy(updates, columns["entropy"], columns["entropy_normalized"])
        if found:
            found.sort(key=lambda v: v.update)
            self.violations += len(found)
            if self.first_violation is None:
                self.first_violation = found[0]
        latest = updates[-1]
        self.latest_violations = tuple(v for v in found if v.update == latest)
        return found

    def levels(self, values: Mapping[str, float | None]) -> dict[str, Level]:
        """The level of every metric at the latest update: each ruled metric as its rule
        judged it, every other one by its value alone (pending, or critical if non-finite)."""
        levels = {}
        for metric in PPO_METRICS:
            judge = self.rules.get(metric)
            if judge is not None:
                levels[metric] = judge.latest.level if judge.latest is not None else Level.PENDING
            else:
                levels[metric] = unruled_level(values.get(metric))
        return levels


def returns_vary(
    stds: Sequence[float | None], means: Sequence[float | None], spread: float
) -> list[bool]:
    """Per update: is ``return_std`` at least ``spread`` times ``|return_mean|`` (and not
    0)? An update that does not report both is judged as usual."""
    return [
        std is None or mean is None or not (std < spread * abs(mean) or std == 0.0)
        for std, mean in zip(stds, means, strict=True)
    ]
