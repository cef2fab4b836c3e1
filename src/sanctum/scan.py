"""One pass over a whole event log, for ``sanctum check`` and ``sanctum summary``.

The dashboard judges the latest update; a check judges every update. ``LogScan`` feeds
each reader batch to the same :class:`SanctumAggregator` the dashboard uses (run facts,
event log) and additionally tallies, per rule, how many updates reached each level with
the same pure ``level_of``, plus per-metric final/min/max and non-finite counts. Work is
done per batch and per column, so memory stays flat however long the log is.

A scan describes one run: the last in the file. When the aggregator starts over (a
``run_started`` of another run id, or the file truncated or replaced while it was read),
the scan forgets its tallies too and records what it dropped in ``earlier_runs``; ``check``
refuses a file that holds several runs, ``summary`` says which runs it left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import msgspec

from sanctum.aggregator import SanctumAggregator, new_run_reason
from sanctum.formatting import plural
from sanctum.health import Level, level_of
from sanctum.metrics import FLOAT_METRICS, PPO_METRICS
from sanctum.state import early_stop_text, metric_columns
from sanctum.thresholds import Rule, Thresholds
from telemetry.eventlog import EventLogError, EventLogReader, ReadBatch, SkippedLine
from telemetry.events import Anomaly, Event, PPOUpdate, PPOUpdatePayload, Rollout, RunStarted

KEPT = 1000
"""Early stops, anomalies and skipped lines listed individually (all are counted)."""


class NoRunStarted(EventLogError):
    """The file holds no ``run_started`` event: not the log of a run."""


@dataclass
class RuleTally:
    """How one rule judged every update of the run."""

    rule: Rule
    measured: int = 0
    """Updates that carried a value (finite or not)."""
    judged: int = 0
    """Updates past the warm-up with a value (not pending)."""
    at_warning: int = 0
    at_critical: int = 0
    first_warning: int | None = None
    first_critical: int | None = None
    worst: float | None = None
    """Worst value seen; a non-finite value is worse than any number."""
    worst_update: int | None = None

    def add(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        numbers: Sequence[float],
        total: float,
    ) -> None:
        """Judge a column of values with their update indices.

        ``numbers`` are the measured values (``values`` itself when none is None) and
        ``total`` their sum (non-finite iff a value is). Only values past the warning
        threshold, and every non-finite value, go through ``level_of``. The same result as
        ``level_of`` on every value, in a few C-speed passes.
        """
        rule = self.rule
        self.measured += len(numbers)
        judged = self._judged_positions(updates, values, numbers)
        self.judged += len(judged)
        if not judged:
            return
        if isinstance(judged, range) and math.isfinite(total):  # all judged, all finite
            worst = rule.worst_of(numbers)
            if not rule.is_worse(worst, rule.warning):  # the healthy case: nothing fired
                self._offer(worst, updates[numbers.index(worst)])
                return
        self._judge_flagged(updates, cast("Sequence[float]", values), judged)

    def _judge_flagged(
        self, updates: Sequence[int], column: Sequence[float], judged: Sequence[int]
    ) -> None:
        """Count, through ``level_of``, the judged values past warning or non-finite (the
        positions in ``judged`` hold numbers); then offer the column's worst."""
        rule = self.rule
        past_warning, isfinite = rule.worse_than(rule.warning), math.isfinite
        flagged = [i for i in judged if past_warning(column[i]) or not isfinite(column[i])]
        for i in flagged:
            self._count(level_of(rule, column[i], updates[i]), updates[i])
        nonfinite = [i for i in flagged if not math.isfinite(column[i])]
        if nonfinite:
            self._offer(column[nonfinite[0]], updates[nonfinite[0]])
            return
        judged_values = [column[i] for i in judged]
        worst = rule.worst_of(judged_values)
        self._offer(worst, updates[judged[judged_values.index(worst)]])

    def _judged_positions(
        self, updates: Sequence[int], values: Sequence[float | None], numbers: Sequence[float]
    ) -> Sequence[int]:
        """Positions with a value past the warm-up (or non-finite): a range when all are."""
        positions: Sequence[int] = range(len(values))
        if numbers is not values:
            positions = [i for i in positions if values[i] is not None]
        warmup = self.rule.warmup_updates
        if warmup and positions and min(updates) < warmup:
            column = cast("Sequence[float]", values)
            positions = [
                i for i in positions if updates[i] >= warmup or not math.isfinite(column[i])
            ]
        return positions

    def _offer(self, value: float, update: int) -> None:
        if self._is_worse(value):
            self.worst, self.worst_update = value, update

    def _count(self, level: Level, update: int) -> None:
        if level is Level.CRITICAL:
            self.at_critical += 1
            if self.first_critical is None:
                self.first_critical = update
        elif level is Level.WARNING:
            self.at_warning += 1
            if self.first_warning is None:
                self.first_warning = update

    def _is_worse(self, value: float) -> bool:
        if self.worst is None:
            return True
        if not math.isfinite(self.worst):
            return False
        return not math.isfinite(value) or self.rule.is_worse(value, self.worst)

    def reached(self, level: Level) -> int:
        """Updates at ``level`` or worse (WARNING or CRITICAL)."""
        return self.at_critical + (self.at_warning if level is Level.WARNING else 0)


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

    def add(
        self,
        updates: Sequence[int],
        values: Sequence[float | None],
        numbers: Sequence[float],
        total: float,
        floats: bool,
    ) -> None:
        """Fold a column: ``numbers`` are its measured values and ``total`` their sum;
        ``floats``: the metric can be non-finite (integers cannot)."""
        if not numbers:
            return
        self.measured += len(numbers)
        last = len(values) - 1
        while values[last] is None:
            last -= 1
        self.final, self.final_update = values[last], updates[last]
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


def measured(values: Sequence[float | None]) -> tuple[Sequence[float], float]:
    """The measured values of a column and their sum: one C-speed pass when none is None."""
    try:
        return cast("Sequence[float]", values), sum(cast("Sequence[float]", values))
    except TypeError:  # a None (not measured) among them
        numbers = [v for v in values if v is not None]
        return numbers, sum(numbers)


@dataclass(frozen=True, slots=True)
class AnomalyRecord:
    update: int | None
    severity: str
    metric: str
    value: float | None
    message: str


@dataclass(frozen=True, slots=True)
class EarlierRun:
    """A run the scan dropped because the log started over after it."""

    run_id: str | None
    updates: int
    why: str
    """The aggregator's reset reason: a new run started, or the file was truncated/replaced."""
    new_run: bool
    """True when a ``run_started`` of another run followed it in the same file (the file
    holds both); False when the file itself was truncated or replaced (it is gone)."""


@dataclass
class LogScan:
    """Everything ``check`` and ``summary`` report, folded from a whole log."""

    path: Path
    thresholds: Thresholds
    aggregator: SanctumAggregator = field(init=False)
    tallies: dict[str, RuleTally] = field(init=False)
    stats: dict[str, MetricStats] = field(init=False)
    nonfinite_updates: int = field(init=False)
    first_nonfinite_update: int | None = field(init=False)
    early_stops: list[tuple[int, str]] = field(init=False)
    anomalies: list[AnomalyRecord] = field(init=False)
    skipped: list[SkippedLine] = field(default_factory=list)
    run_started: bool = False
    best_return: float | None = field(init=False)
    run_id: str | None = None
    """The run being scanned (None before its ``run_started``)."""
    updates_seen: int = field(init=False)
    """``ppo_update`` events of this run."""
    earlier_runs: list[EarlierRun] = field(default_factory=list)
    """Runs dropped because the log started over after them, oldest first."""

    def __post_init__(self) -> None:
        self.aggregator = SanctumAggregator(self.thresholds)
        self._forget_run()

    def _forget_run(self) -> None:
        """Start the per-run tallies afresh (skipped lines are facts of the file: kept)."""
        self.updates_seen = 0
        self.tallies = {r.metric: RuleTally(r) for r in self.thresholds.rules}
        self.stats = {m: MetricStats() for m in PPO_METRICS}
        self.nonfinite_updates, self.first_nonfinite_update = 0, None
        self.early_stops, self.anomalies = [], []
        self.best_return = None

    def _start_over(self, why: str, new_run: bool, updates: int) -> None:
        self.earlier_runs.append(EarlierRun(self.run_id, updates, why, new_run))
        self._forget_run()

    def feed(self, batch: ReadBatch) -> None:
        """Fold one reader batch (the aggregator folds it first: it resets where we do)."""
        self.aggregator.handle_batch(batch)
        self.skipped.extend(batch.skipped[: max(0, KEPT - len(self.skipped))])
        if batch.reset is not None:  # the file is new: what was read of it is gone
            self._start_over(batch.reset, new_run=False, updates=self.updates_seen)
            self.run_id, self.run_started = None, False
        updates: list[PPOUpdatePayload] = []
        returns: list[float] = []
        for event in batch.events:
            if type(event) is PPOUpdate:
                updates.append(event.payload)
            elif type(event) is Rollout:
                ret = event.payload.episode_return_mean
                if ret is not None and math.isfinite(ret):
                    returns.append(ret)
            elif type(event) is Anomaly:
                self._anomaly(event)
            elif type(event) is RunStarted:
                if self.run_id is not None and event.run_id != self.run_id:  # as the aggregator
                    why = new_run_reason(event.run_id)
                    self._start_over(why, new_run=True, updates=self.updates_seen + len(updates))
                    updates.clear()  # this batch's updates and returns so far were that run's
                    returns.clear()
                self.run_id, self.run_started = event.run_id, True
        self.updates_seen += len(updates)
        if updates:
            self._updates(updates)
        if returns:
            best = max(returns)
            self.best_return = best if self.best_return is None else max(self.best_return, best)

    def _updates(self, payloads: list[PPOUpdatePayload]) -> None:
        index, columns = metric_columns(payloads)
        bad_updates: set[int] = set()
        for metric, stats in self.stats.items():
            values = columns[metric]
            numbers, total = measured(values)
            tally = self.tallies.get(metric)
            if tally is not None:
                tally.add(index, values, numbers, total)
            before = stats.nonfinite
            stats.add(index, values, numbers, total, metric in FLOAT_METRICS)
            if stats.nonfinite > before:
                bad_updates.update(
                    u
                    for u, v in zip(index, values, strict=True)
                    if v is not None and not math.isfinite(v)
                )
        if bad_updates:
            self.nonfinite_updates += len(bad_updates)
            if self.first_nonfinite_update is None:
                self.first_nonfinite_update = min(bad_updates)
        for p in payloads:
            if p.early_stopped and len(self.early_stops) < KEPT:
                self.early_stops.append((p.update, early_stop_text(p)))

    def _anomaly(self, event: Anomaly) -> None:
        p = event.payload
        if len(self.anomalies) < KEPT:
            self.anomalies.append(AnomalyRecord(p.update, p.severity, p.metric, p.value, p.message))

    @property
    def early_stop_count(self) -> int:
        return self.aggregator.tamiyo.early_stops


def run_starts(path: Path) -> list[tuple[int, str]]:
    """(line number, run id) of each ``run_started`` that begins a new run in the file at
    ``path`` (a run id other than the one before it), decoded as the reader decodes.

    Events carry no line numbers, so this second pass runs only when a scan found more
    than one run, to name the lines; it decodes only lines that mention run_started.
    """
    decoder = msgspec.json.Decoder(Event, strict=False)
    starts: list[tuple[int, str]] = []
    with open(path, "rb") as fh:
        for line_no, line in enumerate(fh, 1):
            if b"run_started" not in line:
                continue
            try:
                event = decoder.decode(line)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # the reader skipped it too
            if isinstance(event, RunStarted) and (not starts or starts[-1][1] != event.run_id):
                starts.append((line_no, event.run_id))
    return starts


def scan_log(path: Path, thresholds: Thresholds) -> LogScan:
    """Read the whole log at ``path`` once. Raises EventLogError for unusable input."""
    scan = LogScan(path, thresholds)
    reader = EventLogReader(path)
    for batch in reader.batches():
        scan.feed(batch)
    if not scan.run_started:
        agg = scan.aggregator
        raise NoRunStarted(
            f"{path}: no run_started event in {plural(reader.line_no, 'line')} "
            f"({plural(agg.run.events, 'event')}, "
            f"{plural(agg.malformed + agg.unknown_kind, 'line')} skipped); "
            "not the event log of a run"
        )
    return scan
