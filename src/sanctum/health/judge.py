"""Every update judged against the rule table, in order, with memory: the one judgement.

:class:`HealthJudge` runs every rule (a :class:`~sanctum.health.rule_judge.RuleJudge` each), the
non-finite rule and the range contracts over a batch of updates, and keeps each metric's
:class:`MetricStats`. The non-finite rule reaches every measurement of the log
(:mod:`sanctum.health.finite`): NaN or Inf elsewhere than in the metric columns (a nested
field of an update, a float of another kind of event) is tallied by field path. The
aggregator owns one, so the dashboard, ``check`` and ``summary`` read the same judgement of
the same updates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from sanctum.health import contracts
from sanctum.health.levels import Level, unruled_level
from sanctum.health.rule import SAME_CONCEPT
from sanctum.health.rule_judge import (
    RETURNS_FLAT,
    RETURNS_UNKNOWN,
    ComponentSplit,
    RuleJudge,
    measured,
)
from sanctum.health.thresholds import Thresholds
from sanctum.metrics import FLOAT_METRICS, PPO_METRICS
from telemetry.events import KLMeasure

FIELDS_KEPT: Final = 20
"""Field paths a non-finite tally names one by one (a dict's keys come from outside: a
hostile log may hold millions); the rest are counted."""


@dataclass
class FieldTally:
    """NaN or Inf in one field outside the metric columns: how often, and during which
    update first (None: in an event that names no update)."""

    count: int = 0
    first_update: int | None = None


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
    ) -> tuple[list[int], tuple[float, float] | None]:
        """Fold a column; ``floats``: the metric can be non-finite (integers cannot).
        Returns the updates whose value was non-finite, and the smallest and largest
        finite value of the column (None: none), which the range contracts reuse."""
        numbers, total = measured(values)
        if not numbers:
            return [], None
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
        if not numbers:
            return bad, None
        low, high = min(numbers), max(numbers)
        self.minimum = low if self.minimum is None else min(self.minimum, low)
        self.maximum = high if self.maximum is None else max(self.maximum, high)
        return bad, (low, high)

    def fold_one(self, update: int, value: float, floats: bool) -> bool:
        """:meth:`fold` of a column of one measured value (the same state after it);
        returns whether the value is finite (then it is its column's extremes)."""
        self.measured += 1
        self.final, self.final_update = value, update
        if floats and not math.isfinite(value):
            self.nonfinite += 1
            if self.first_nonfinite is None:
                self.first_nonfinite = update
            return False
        minimum, maximum = self.minimum, self.maximum
        self.minimum = value if minimum is None else min(minimum, value)
        self.maximum = value if maximum is None else max(maximum, value)
        return True


class HealthJudge:
    """Every rule, the non-finite rule and the range contracts over one run's updates."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds
        self.rules = {rule.metric: RuleJudge(rule) for rule in thresholds.rules}
        self.contracts = contracts.CONTRACTS + contracts.kl_contracts({})
        self.stats = {metric: MetricStats() for metric in PPO_METRICS}
        """Final, smallest, largest and non-finite values of every metric."""
        self.nonfinite_updates = 0
        """Updates holding a NaN or Inf, in a metric or in a nested field."""
        self.first_nonfinite_update: int | None = None
        self.nonfinite_fields: dict[str, FieldTally] = {}
        """NaN or Inf outside the metric columns, by field path (``rollout.steps_per_second``,
        ``ppo_update.reward_components.format``): the first FIELDS_KEPT paths."""
        self.nonfinite_unlisted = 0
        """Non-finite values in paths past FIELDS_KEPT (counted, not named)."""
        self.nonfinite_events: dict[str, int] = {}
        """Events of kinds other than ``ppo_update`` holding a NaN or Inf, by kind."""
        self.violations = 0
        self.first_violation: contracts.Violation | None = None
        self.latest_violations: tuple[contracts.Violation, ...] = ()
        """The range violations of the latest update (what the verdict shows now)."""
        self.last_update: int | None = None
        self.last_step: int | None = None
        self.index_gaps = 0
        """Update indices the log jumps over (:meth:`_count_skipped_indices`)."""
        self.first_index_gap: tuple[int, int] | None = None
        """(before, after) of the first jump."""
        self._frozen = 0
        """Updates in a row, up to the last, that changed nothing (contracts.check_frozen)."""
        self._splits: dict[str, ComponentSplit] = {}
        """The reward components' recent values, per ``split`` rule."""

    def configure(
        self, config: Mapping[str, object], kl: Mapping[str, KLMeasure] | None = None
    ) -> None:
        """Take the run's ``run_started.config`` and ``kl`` into account (the KL estimator
        each names)."""
        self.contracts = contracts.CONTRACTS + contracts.kl_contracts(config, kl)

    def fold(
        self,
        updates: Sequence[int],
        columns: Mapping[str, Sequence[float | None]],
        steps: Sequence[int] = (),
        components: Sequence[Mapping[str, float] | None] = (),
        elsewhere: Sequence[tuple[int, Sequence[str]]] = (),
    ) -> list[contracts.Violation]:
        """Judge a batch of updates (indices, one column per metric, their ``global_step``
        when known and their ``reward_components``, in file order, and the updates holding
        a NaN or Inf outside the columns with its paths: :func:`~sanctum.health.finite.
        update_paths`); returns the range violations found, for the event log."""
        if not updates:
            return []
        for metric, judge in self.rules.items():
            rule = judge.rule
            spread = rule.min_return_spread
            gate = None
            if spread is not None:
                gate = returns_vary(columns["return_std"], columns["return_mean"], spread)
            values = concept_column(columns, metric)
            others = concept_column(columns, rule.per) if rule.per is not None else None
            if rule.per_required and others is not None:
                gate = without_per(others, rule.per, gate)
            companion = columns[rule.rise_with] if rule.rise_with is not None else None
            inputs = rule.judged_column(values, others)
            if rule.statistic == "split":
                inputs = self._split(metric, rule.window).column(
                    components or [None] * len(updates)
                )
            judge.fold(updates, values, gate, inputs, companion)
        for update, paths in elsewhere:
            self._tally_fields(update, paths)
        if len(updates) == 1:  # a live run: one update at a time, most columns unmeasured
            extremes = self._stats_one(updates[0], columns, bool(elsewhere))
        else:
            extremes = self._stats(updates, columns, [u for u, _ in elsewhere])
        found = self._violations(updates, columns, steps, extremes)
        self._count_skipped_indices(updates)
        self.last_update = (
            max(updates) if self.last_update is None else max(self.last_update, *updates)
        )
        if steps:
            self.last_step = max(steps) if self.last_step is None else max(self.last_step, *steps)
        return found

    def _count_skipped_indices(self, updates: Sequence[int]) -> None:
        """Update indices the log jumps over (0, then 2: update 1 is not in it), however its
        ``seq`` is numbered: updates the gate never saw."""
        previous = self.last_update
        first = updates[0] if previous is None else previous + 1
        last = first + len(updates) - 1
        if updates[0] == first and updates[-1] == last and contracts.rising(updates):
            return  # every index on from the last, none skipped (the common batch)
        for update in updates:
            if previous is not None and update > previous + 1:
                if self.first_index_gap is None:
                    self.first_index_gap = (previous, update)
                self.index_gaps += update - previous - 1
            previous = update if previous is None else max(previous, update)

    def _split(self, metric: str, window: int) -> ComponentSplit:
        split = self._splits.get(metric)
        if split is None:
            split = self._splits[metric] = ComponentSplit(window)
        return split

    def fold_event(self, kind: str, update: int | None, paths: Sequence[str]) -> None:
        """An event of ``kind`` (not ``ppo_update``), during ``update`` when it names one,
        holding a NaN or Inf at each of ``paths``."""
        self.nonfinite_events[kind] = self.nonfinite_events.get(kind, 0) + 1
        self._tally_fields(update, paths)

    def _tally_fields(self, update: int | None, paths: Sequence[str]) -> None:
        fields = self.nonfinite_fields
        for path in paths:
            tally = fields.get(path)
            if tally is None:
                if len(fields) >= FIELDS_KEPT:
                    self.nonfinite_unlisted += 1
                    continue
                tally = fields[path] = FieldTally(first_update=update)
            tally.count += 1

    def _stats(
        self,
        updates: Sequence[int],
        columns: Mapping[str, Sequence[float | None]],
        elsewhere: Sequence[int] = (),
    ) -> dict[str, tuple[float, float] | None]:
        """Fold every column's statistics; return each column's finite extremes.
        ``elsewhere``: updates holding a NaN or Inf outside the columns."""
        bad_updates: set[int] = set(elsewhere)
        extremes: dict[str, tuple[float, float] | None] = {}
        for metric, stats in self.stats.items():
            bad, extremes[metric] = stats.fold(updates, columns[metric], metric in FLOAT_METRICS)
            bad_updates.update(bad)
        if bad_updates:
            self.nonfinite_updates += len(bad_updates)
            if self.first_nonfinite_update is None:
                self.first_nonfinite_update = min(bad_updates)
        return extremes

    def _stats_one(
        self, update: int, columns: Mapping[str, Sequence[float | None]], elsewhere: bool
    ) -> dict[str, tuple[float, float] | None]:
        """:meth:`_stats` of one update: only the metrics it measured are folded."""
        extremes: dict[str, tuple[float, float] | None] = dict.fromkeys(self.stats)
        finite = not elsewhere
        for metric, stats in self.stats.items():
            value = columns[metric][0]
            if value is None:
                continue
            if stats.fold_one(update, value, metric in FLOAT_METRICS):
                extremes[metric] = (value, value)
            else:
                finite = False
        if not finite:
            self.nonfinite_updates += 1
            if self.first_nonfinite_update is None:
                self.first_nonfinite_update = update
        return extremes

    def _violations(
        self,
        updates: Sequence[int],
        columns: Mapping[str, Sequence[float | None]],
        steps: Sequence[int],
        extremes: Mapping[str, tuple[float, float] | None],
    ) -> list[contracts.Violation]:
        found = contracts.check_order(self.last_update, updates)
        if steps:
            found += contracts.check_steps(self.last_step, updates, steps)
        for contract in self.contracts:
            extreme = extremes[contract.metric]
            if extreme is not None and contract.breached_by(*extreme):
                found += contracts.check_column(contract, updates, columns[contract.metric])
        found += contracts.check_entropy(updates, columns["entropy"], columns["entropy_normalized"])
        if any(x is not None for x in columns["approx_kl_max"]):
            found += contracts.check_kl_max(updates, columns["approx_kl"], columns["approx_kl_max"])
        frozen, self._frozen = contracts.check_frozen(
            self._frozen, updates, columns["grad_norm"], concept_column(columns, "approx_kl")
        )
        found += frozen
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


def concept_column(
    columns: Mapping[str, Sequence[float | None]], metric: str
) -> Sequence[float | None]:
    """The column a rule of ``metric`` reads: the metric, or where it is absent the field
    that measures the same thing (:data:`~sanctum.health.rule.SAME_CONCEPT`)."""
    own = columns[metric]
    other = SAME_CONCEPT.get(metric)
    if other is None or None not in own:
        return own
    theirs = columns[other]
    return [v if v is not None else o for v, o in zip(own, theirs, strict=True)]


def without_per(
    others: Sequence[float | None], per: str | None, gate: list[str | None] | None
) -> list[str | None]:
    """``gate`` with every update that lacks the ``per`` metric not judged."""
    why = f"not judged: per-sequence KL without {per}"
    if per == "completion_length_mean":
        why = "not judged: per-sequence KL without completion lengths"
    base = gate if gate is not None else [None] * len(others)
    return [why if o is None else g for o, g in zip(others, base, strict=True)]


def returns_vary(
    stds: Sequence[float | None], means: Sequence[float | None], spread: float
) -> list[str | None]:
    """Per update, why it is not judged (None: it is): ``return_std`` under ``spread``
    times ``|return_mean|`` (or 0), or not recorded at all (a gate never judges blind)."""
    return [
        RETURNS_UNKNOWN
        if std is None or mean is None
        else RETURNS_FLAT
        if std < spread * abs(mean) or std == 0.0
        else None
        for std, mean in zip(stds, means, strict=True)
    ]
