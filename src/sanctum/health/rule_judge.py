"""One rule over the updates of a run, with memory.

A rule's level at an update can depend on the updates before it: a rolling median, a
jump over the recent median, a level that must persist for several updates. So judging is
a fold: :class:`RuleJudge` keeps the window of recent values, the streaks, the tallies
``sanctum check`` reports (updates measured, judged, at each level, the first of each, the
worst statistic) and the latest :class:`Judgement`, which the dashboard shows.

A healthy batch costs a few C-speed passes per plain rule (``min``/``max``/``sum`` over a
column); only values past a warning line, non-finite values, rolling statistics and
running streaks go through the per-update path.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Final, cast

from sanctum.health.levels import Level, level_of
from sanctum.health.rule import Rule

JUMP_BASELINE: Final = 3
"""A jump is judged once this many values make the median it is measured against."""


def values_needed(rule: Rule) -> int:
    """Values a rolling statistic needs before it judges: a jump's baseline, or half the
    window for a median (a median of one or two values is no smoother than the value)."""
    if rule.statistic in ("start", "split", "high"):
        return rule.window
    return JUMP_BASELINE if rule.statistic in ("jump", "shift") else (rule.window + 1) // 2


RETURNS_FLAT: Final = "not judged: returns nearly constant"
RETURNS_UNKNOWN: Final = "not judged: return spread not recorded"
"""A rule gated on the returns' spread cannot tell flat returns from varied ones when the
trainer records no ``return_std``: it does not judge blind."""
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
    pending: str | None = None
    """Why the latest update was not judged, when it was not (``warm-up``, ``not judged:
    ...``)."""

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

    def push_median(self, value: float) -> float:
        """:meth:`push`, then :meth:`median`, in one call."""
        return self.push_medians((value,))[0]

    def push_medians(self, values: Sequence[float]) -> list[float]:
        """:meth:`push_median` of each value in turn, in one loop (the hot path of a
        median rule)."""
        order, ordered, size = self._order, self._sorted, self.size
        out: list[float] = []
        for value in values:
            if len(order) == size:
                del ordered[bisect_left(ordered, order.popleft())]
            order.append(value)
            insort(ordered, value)
            n = len(ordered)
            mid = n // 2
            out.append(ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2)
        return out


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
        plain = rule.statistic in ("value", "split")  # a split arrives computed
        self.window = None if plain else RollingWindow(rule.window)
        self._low_baseline = False
        """The last statistic was not judged: its jump's baseline is under ``min_baseline``."""
        self._need = values_needed(rule)
        self._past_critical = (
            rule.worse_than(rule.critical) if rule.critical is not None else _never
        )
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
        self._recent: deque[float] = deque(maxlen=rule.span - 1)
        """The measured values before the latest, for the max over ``span``."""
        self._start: float | None = None
        """The median of the run's first ``window`` values (statistic ``start``)."""
        self._high: float | None = None
        """The largest value judged so far, none past critical (statistic ``high``)."""
        self._counted = 0
        """Values the ``high`` has seen."""
        self._rise = RiseTracker(rule) if rule.rise_with is not None else None
        self._seen = False
        self._missing = 0
        """A value was measured (``Rule.lost``: an update without one is then a fault)."""
        self._unconfirmed: set[int] = set()
        """Positions of this batch whose critical band the ``rise_with`` gate holds back."""

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
            self.latest.note if self.latest is not None and self.latest.statistic is None else None,
        )

    def fold(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        unjudged: Sequence[str | None] | None = None,
        inputs: Sequence[float | None] | None = None,
        companion: Sequence[float | None] | None = None,
    ) -> None:
        """Judge a column of values, in update order. ``unjudged[i]``: why update ``i``
        fails the rule's gate and is not judged (None: it is judged). ``inputs``: what the
        statistic is computed from when it is not the values themselves (a rule ``per``
        another metric: :meth:`Rule.judged_column`). ``companion``: the column of the
        rule's ``rise_with`` metric."""
        if not values:
            return
        if len(values) == 1 and values[0] is None and (inputs is None or inputs[0] is None):
            # one update that did not measure the metric: pending, nothing else changes
            self.latest = Judgement(updates[0], None, None, Level.PENDING, Level.PENDING)
            return
        numbers, _ = measured(values)
        self.measured += len(numbers)
        source = self._spanned(values if inputs is None else inputs)
        statistics, note = self._statistics(updates, source, unjudged)
        if self.rule.lost:
            statistics = self._lost(values, statistics)
        self._unconfirmed = set()
        if self._rise is not None:
            self._unconfirmed = self._rise.unconfirmed(updates, statistics, companion)
        judged: Sequence[int] = range(len(values))
        if (statistics is not values or len(numbers) != len(values)) and None in statistics:
            judged = [i for i, s in enumerate(statistics) if s is not None]
        self.judged += len(judged)
        column = statistics if isinstance(judged, range) else [statistics[i] for i in judged]
        flagged = self._flagged(judged, cast("Sequence[float]", column))
        latest = self._fire(updates, values, statistics, judged, flagged)
        self._offer_worst(updates, statistics, judged, flagged, column)
        last = len(values) - 1
        if latest is None:
            value, statistic = values[last], statistics[last]
            if statistic is None:
                latest = Judgement(updates[last], value, None, Level.PENDING, Level.PENDING, note)
            else:
                latest = Judgement(updates[last], value, statistic, Level.HEALTHY, Level.HEALTHY)
        self.latest = latest

    def _flagged(self, judged: Sequence[int], column: Sequence[float]) -> list[int]:
        """The positions of ``judged`` (``column`` holds their statistics) that are
        non-finite or past the warning line: none, in a healthy batch, for the price of a
        C-speed sum and max (or min)."""
        past_warning = self.rule.worse_than(self.rule.warning)
        if not column:
            return []
        if math.isfinite(sum(column)):  # every statistic finite (a sum that overflowed is not)
            if not past_warning(self.rule.worst_of(column)):
                return []
            return list(compress(judged, map(past_warning, column)))
        isfinite = math.isfinite
        return [
            i for i, s in zip(judged, column, strict=True) if not isfinite(s) or past_warning(s)
        ]

    def _lost(
        self, values: Sequence[float | None], statistics: Sequence[float | None]
    ) -> Sequence[float | None]:
        """``statistics`` with NaN at each update without a value once one was measured,
        and once ``span`` updates in a row lack it (a run optimised ``span`` times per batch
        measures its reward once per batch)."""
        out = list(statistics)
        for i, value in enumerate(values):
            if value is not None:
                self._seen, self._missing = True, 0
            elif self._seen:
                self._missing += 1
                if self._missing >= self.rule.span:
                    out[i] = math.nan
        return out

    def _spanned(self, values: Sequence[float | None]) -> Sequence[float | None]:
        """Each measured value as the largest of it and the ``span - 1`` before it."""
        if self.rule.span == 1:
            return values
        recent, out = self._recent, []
        for value in values:
            if value is None or not math.isfinite(value):
                out.append(value)
                continue
            out.append(max(value, *recent) if recent else value)
            recent.append(value)
        return out

    def _statistics(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        unjudged: Sequence[str | None] | None,
    ) -> tuple[Sequence[float | None], str | None]:
        """What the rule judges at each update (None: pending), and why the last is pending.

        A plain rule past its warm-up judges the values themselves (no copy). A non-finite
        value is judged as it is, even in the warm-up: it is critical at once.
        """
        rule = self.rule
        if self.window is None and unjudged is None and updates[0] >= rule.warmup_updates:
            return values, None
        steady = self._steady(updates, values, unjudged)
        if steady is not None:
            return steady
        out: list[float | None] = []
        note: str | None = None
        for i, value in enumerate(values):
            note = None
            if value is None or not math.isfinite(value):
                out.append(value)
            elif updates[i] < rule.warmup_updates and self._rise is None:
                out.append(None)
                note = WARMUP
            elif unjudged is not None and unjudged[i] is not None:
                out.append(None)
                note = unjudged[i]
            else:
                statistic = self._statistic(value)
                if statistic is None and self._low_baseline:
                    note = f"not judged: recent median under {rule.min_baseline:g}"
                elif statistic is None:  # the window is still filling
                    what = "median" if rule.statistic == "median" else "baseline"
                    note = f"{what} {len(self.window or ())}/{self._need}"
                out.append(statistic)
        return out, note

    def _steady(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        unjudged: Sequence[str | None] | None,
    ) -> tuple[Sequence[float | None], str | None] | None:
        """:meth:`_statistics` of a batch in the steady state, in one tight loop per
        statistic (the same numbers as :meth:`_statistic` value by value): every value
        finite, past the warm-up, none held back by the gate, and the window already past
        what it needs. None when the batch is not all that (the loop value by value then)."""
        rule, window = self.rule, self.window
        if unjudged is not None and None not in unjudged:  # the gate holds every one back
            return self._held_back(updates, values, unjudged)
        if window is None or rule.statistic == "start":
            return None
        seen = self._counted if rule.statistic == "high" else len(window)  # a high has no window
        if seen < self._need:
            return None
        try:
            if not math.isfinite(sum(values)):  # type: ignore[arg-type]
                return None
        except TypeError:  # a None: not measured
            return None
        if rule.warmup_updates and self._rise is None and min(updates) < rule.warmup_updates:
            return None
        if unjudged is not None and unjudged.count(None) != len(unjudged):
            return None
        finite = cast("Sequence[float]", values)
        if rule.statistic == "median":
            return window.push_medians(finite), None
        if rule.statistic == "high":
            return self._highs(finite), None
        out = self._jumps(window, finite)
        note = None
        if out[-1] is None:
            note = (
                f"not judged: recent median under {rule.min_baseline:g}"
                if self._low_baseline
                else f"baseline {len(window)}/{self._need}"
            )
        return out, note

    def _held_back(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        unjudged: Sequence[str | None],
    ) -> tuple[list[float | None], str | None] | None:
        """:meth:`_statistics` of a batch the gate holds back whole, past the warm-up and
        with no non-finite value (which is judged whatever the gate says): nothing judged,
        nothing joins the window, and the last measured value says why. None otherwise."""
        rule = self.rule
        _, total = measured(values)
        if not math.isfinite(total):
            return None
        if rule.warmup_updates and self._rise is None and min(updates) < rule.warmup_updates:
            return None
        note = unjudged[-1] if values[-1] is not None else None
        return [None] * len(values), note

    def _jumps(self, window: RollingWindow, values: Sequence[float]) -> list[float | None]:
        """A jump or a shift of each of ``values``, the window past its baseline: each value
        against the median before it (its ratio, or for a shift its distance), joining it
        unless past critical; off a baseline at or under 0 nothing is judged, and under the
        rule's ``min_baseline`` only a value under its ``floor`` (which joins: the baseline
        can recover)."""
        rule, past_critical = self.rule, self._past_critical
        low, floor, shift = rule.min_baseline, rule.floor, rule.statistic == "shift"
        order, ordered, size = window._order, window._sorted, window.size
        out: list[float | None] = []
        low_baseline = False
        for value in values:
            n = len(ordered)
            mid = n // 2
            baseline = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
            low_baseline = low is not None and baseline < low
            statistic: float | None
            if low_baseline:
                statistic = value if floor is not None and value < floor else None
            elif shift:
                statistic = abs(value - baseline)
            elif baseline <= 0:
                out.append(None)
                continue
            else:
                statistic = value / baseline
            if low_baseline or not past_critical(statistic):  # type: ignore[arg-type]
                if n == size:
                    del ordered[bisect_left(ordered, order.popleft())]
                order.append(value)
                insort(ordered, value)
            out.append(statistic)
        self._low_baseline = low_baseline
        return out

    def _highs(self, values: Sequence[float]) -> list[float | None]:
        """Each value over the run's largest before it, once ``window`` values were seen;
        a value past critical does not become the record (a fault keeps firing)."""
        high, counted, need = self._high, self._counted, self._need
        past_critical, out = self._past_critical, []
        statistic: float | None
        for value in values:
            counted += 1
            statistic = value / high if counted > need and high is not None and high > 0 else None
            if statistic is None or not past_critical(statistic):
                high = value if high is None or value > high else high
            out.append(statistic)
        self._high, self._counted = high, counted
        return out

    def _statistic(self, value: float) -> float | None:
        """The value, the median including it, or its ratio to the median before it. A
        jump joins its baseline unless it is past critical: a fault keeps firing."""
        self._low_baseline = False
        window = self.window
        if window is None:
            return value
        if self.rule.statistic == "median":
            median = window.push_median(value)
            return median if len(window) >= self._need else None
        if self.rule.statistic == "high":
            return self._highs((value,))[0]
        if self.rule.statistic == "start":
            if self._start is None:
                window.push(value)
                if len(window) == self._need:
                    self._start = window.median()
                return None
            return value / self._start if self._start > 0 else None
        if len(window) < self._need:
            window.push(value)
            return self._under_floor(value)
        return self._jumps(window, (value,))[0]

    def _under_floor(self, value: float) -> float | None:
        """The value itself where no jump is judged, when it is under the rule's ``floor``
        (a collapse before any baseline formed); else None (pending)."""
        floor = self.rule.floor
        return value if floor is not None and value < floor else None

    def _fire(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        statistics: Sequence[float | None],
        judged: Sequence[int],
        flagged: Sequence[int],
    ) -> Judgement | None:
        """Streaks and levels at the positions past the warning line (every other judged
        position is healthy and breaks a streak); the last position's judgement if flagged."""
        rule, last = self.rule, len(values) - 1
        latest: Judgement | None = None
        previous = -1
        for i in flagged:
            if _any_between(judged, previous, i):
                self.streak_warning = self.streak_critical = 0
            previous = i
            statistic = statistics[i]
            assert statistic is not None
            band = level_of(rule, statistic, updates[i])
            if self._rise is not None:
                band = self._rise.band(statistic, updates[i], i not in self._unconfirmed)
            self._streak(band)
            level = self._persisted(band, statistic)
            self._count(level, updates[i])
            if i == last:
                note = None
                if level is not band:  # past a line, not for long enough yet: ``crit 1/2``
                    note = f"{band.value[:4]} {self._streak_of(band)}/{rule.persist}"
                latest = Judgement(updates[i], values[i], statistic, band, level, note)
        if _any_between(judged, previous, last + 1):
            self.streak_warning = self.streak_critical = 0
        return latest

    def _streak(self, band: Level) -> None:
        self.streak_warning = self.streak_warning + 1 if band >= Level.WARNING else 0
        self.streak_critical = self.streak_critical + 1 if band >= Level.CRITICAL else 0

    def _streak_of(self, band: Level) -> int:
        return self.streak_critical if band is Level.CRITICAL else self.streak_warning

    def _persisted(self, band: Level, statistic: float) -> Level:
        rule = self.rule
        if not math.isfinite(statistic):
            return Level.CRITICAL  # non-finite: at once
        if band is Level.CRITICAL and rule.far is not None and rule.is_worse(statistic, rule.far):
            return Level.CRITICAL  # past far: no waiting
        if self.streak_critical >= rule.persist:
            return Level.CRITICAL
        if self.streak_warning >= rule.persist:
            return Level.WARNING
        return Level.HEALTHY

    def _count(self, level: Level, update: int) -> None:
        if level is Level.CRITICAL:
            self.at_critical += 1
            if self.first_critical is None:
                self.first_critical = update
        elif level is Level.WARNING:
            self.at_warning += 1
            if self.first_warning is None:
                self.first_warning = update

    def _offer_worst(
        self,
        updates: Sequence[int],
        statistics: Sequence[float | None],
        judged: Sequence[int],
        flagged: Sequence[int],
        column: Sequence[float | None],
    ) -> None:
        """Keep the worst judged statistic: the first non-finite one, else the first most
        extreme (a C-speed max or min over ``column``, the judged statistics)."""
        nonfinite = [i for i in flagged if not math.isfinite(statistics[i])]  # type: ignore[arg-type]
        if nonfinite:
            self._offer(statistics[nonfinite[0]], updates[nonfinite[0]])  # type: ignore[arg-type]
            return
        if not judged:
            return
        worst = self.rule.worst_of(column)  # type: ignore[arg-type]
        self._offer(worst, updates[judged[column.index(worst)]])

    def _offer(self, value: float, update: int) -> None:
        worst = self.worst
        if worst is None or (
            math.isfinite(worst) and (not math.isfinite(value) or self.rule.is_worse(value, worst))
        ):
            self.worst, self.worst_update = value, update


class ComponentSplit:
    """The ``split`` statistic of a run's ``reward_components``, update by update: over the
    last ``window`` updates, the smaller of the largest rise of one component and the
    largest fall of another (each the median of the later half of the window less the
    median of the earlier half; 0 when none rose or none fell)."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.recent: dict[str, deque[float]] = {}

    def column(self, components: Sequence[Mapping[str, float] | None]) -> list[float | None]:
        """The split at each update (None: no components, or a window not yet full)."""
        out: list[float | None] = []
        for named in components:
            if not named:
                out.append(None)
                continue
            for name, value in named.items():
                if math.isfinite(value):
                    self.recent.setdefault(name, deque(maxlen=self.window)).append(value)
            moves = [_half_move(v) for v in self.recent.values() if len(v) == self.window]
            if len(moves) < 2:
                out.append(None)
                continue
            out.append(max(0.0, min(max(moves), -min(moves))))
        return out


def _half_move(values: deque[float]) -> float:
    """The median of the later half of ``values`` less the median of the earlier half."""
    ordered = list(values)
    half = len(ordered) // 2
    return statistics.median(ordered[-half:]) - statistics.median(ordered[:half])


class RiseTracker:
    """Whether a median rule's rise is confirmed (``Rule.rise_with``): its median rose at
    least ``rise`` above its lowest so far, and the other metric's median over
    the same window rose above what it was at that lowest point."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.other = RollingWindow(rule.window)
        self.lowest: float | None = None
        self.other_at_lowest: float | None = None

    def unconfirmed(
        self,
        updates: Sequence[int],
        statistics: Sequence[float | None],
        companion: Sequence[float | None] | None,
    ) -> set[int]:
        """Positions whose statistic is judged but whose rise is not confirmed."""
        out: set[int] = set()
        rule = self.rule
        for i, statistic in enumerate(statistics):
            other = companion[i] if companion is not None else None
            other_median: float | None = None
            if other is not None and math.isfinite(other):
                other_median = self.other.push_median(other)
            elif len(self.other):
                other_median = self.other.median()
            if statistic is None or not math.isfinite(statistic):
                continue
            if self.lowest is None or statistic < self.lowest:
                self.lowest, self.other_at_lowest = statistic, other_median
            confirmed = (
                self.lowest is not None
                and statistic - self.lowest >= rule.rise
                and other_median is not None
                and self.other_at_lowest is not None
                and other_median > self.other_at_lowest
            )
            if not confirmed:
                out.add(i)
        return out

    def band(self, statistic: float, update: int, confirmed: bool) -> Level:
        """The band of a finite statistic: past critical with its rise confirmed is
        critical; past a line without it warns, and only after the warm-up."""
        rule = self.rule
        if rule.critical is not None and rule.is_worse(statistic, rule.critical) and confirmed:
            return Level.CRITICAL
        if not rule.is_worse(statistic, rule.warning):
            return Level.HEALTHY
        return Level.WARNING if confirmed or update >= rule.warmup_updates else Level.HEALTHY


def _never(value: float) -> bool:
    """A warn-only rule's critical line: never past."""
    return False


def _any_between(judged: Sequence[int], low: int, high: int) -> bool:
    """Whether a judged position lies strictly between ``low`` and ``high``."""
    if isinstance(judged, range):
        return high - low > 1 and high > 0 and low < len(judged) - 1
    return bisect_left(judged, high) - bisect_right(judged, low) > 0
