"""One pass over a whole event log, for ``sanctum check`` and ``sanctum summary``.

The dashboard judges the latest update; a check judges every update. ``LogScan`` feeds
each reader batch to the same :class:`SanctumAggregator` the dashboard uses (run facts,
event log) and additionally tallies, per rule, how many updates reached each level with
the same pure ``level_of``, plus per-metric final/min/max and non-finite counts. Work is
done per batch and per column, so memory stays flat however long the log is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sanctum.aggregator import SanctumAggregator, early_stop_text
from sanctum.health import Level, level_of
from sanctum.metrics import FLOAT_METRICS, PPO_METRICS
from sanctum.state import metric_columns
from sanctum.thresholds import Rule, Thresholds
from telemetry.eventlog import EventLogError, EventLogReader, ReadBatch, SkippedLine
from telemetry.events import Anomaly, PPOUpdate, PPOUpdatePayload, Rollout, RunStarted

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

    def add(self, updates: Sequence[int], values: Sequence[float | None]) -> None:
        """Judge a column of values with their update indices."""
        rule = self.rule
        for update, value in zip(updates, values, strict=True):
            if value is None:
                continue
            self.measured += 1
            level = level_of(rule, value, update)
            if level is Level.PENDING:
                continue
            self.judged += 1
            if level is Level.CRITICAL:
                self.at_critical += 1
                if self.first_critical is None:
                    self.first_critical = update
            elif level is Level.WARNING:
                self.at_warning += 1
                if self.first_warning is None:
                    self.first_warning = update
            if self._is_worse(value):
                self.worst, self.worst_update = value, update

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

    def add(self, updates: Sequence[int], values: Sequence[float | None], floats: bool) -> None:
        """Fold a column; ``floats``: the metric can be non-finite (integers cannot)."""
        present = [(u, v) for u, v in zip(updates, values, strict=True) if v is not None]
        if not present:
            return
        self.measured += len(present)
        self.final_update, self.final = present[-1]
        numbers = [v for _, v in present]
        if floats and not math.isfinite(sum(numbers)):  # one sum finds NaN/Inf in C speed
            bad = [u for u, v in present if not math.isfinite(v)]
            self.nonfinite += len(bad)
            if bad and self.first_nonfinite is None:
                self.first_nonfinite = bad[0]
            numbers = [v for v in numbers if math.isfinite(v)]
        if numbers:
            low, high = min(numbers), max(numbers)
            self.minimum = low if self.minimum is None else min(self.minimum, low)
            self.maximum = high if self.maximum is None else max(self.maximum, high)


@dataclass(frozen=True, slots=True)
class AnomalyRecord:
    update: int | None
    severity: str
    metric: str
    value: float | None
    message: str


@dataclass
class LogScan:
    """Everything ``check`` and ``summary`` report, folded from a whole log."""

    path: Path
    thresholds: Thresholds
    aggregator: SanctumAggregator = field(init=False)
    tallies: dict[str, RuleTally] = field(init=False)
    stats: dict[str, MetricStats] = field(init=False)
    nonfinite_updates: int = 0
    first_nonfinite_update: int | None = None
    early_stops: list[tuple[int, str]] = field(default_factory=list)
    anomalies: list[AnomalyRecord] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    run_started: bool = False
    best_return: float | None = None

    def __post_init__(self) -> None:
        self.aggregator = SanctumAggregator(self.thresholds)
        self.tallies = {r.metric: RuleTally(r) for r in self.thresholds.rules}
        self.stats = {m: MetricStats() for m in PPO_METRICS}

    def feed(self, batch: ReadBatch) -> None:
        """Fold one reader batch."""
        self.aggregator.handle_batch(batch)
        self.skipped.extend(batch.skipped[: max(0, KEPT - len(self.skipped))])
        updates: list[PPOUpdatePayload] = []
        for event in batch.events:
            if type(event) is PPOUpdate:
                updates.append(event.payload)
            elif type(event) is Rollout:
                ret = event.payload.episode_return_mean
                if ret is not None and math.isfinite(ret):
                    best = self.best_return
                    self.best_return = ret if best is None else max(best, ret)
            elif type(event) is Anomaly:
                self._anomaly(event)
            elif type(event) is RunStarted:
                self.run_started = True
        if updates:
            self._updates(updates)

    def _updates(self, payloads: list[PPOUpdatePayload]) -> None:
        index, columns = metric_columns(payloads)
        for metric, tally in self.tallies.items():
            tally.add(index, columns[metric])
        bad_updates: set[int] = set()
        for metric, stats in self.stats.items():
            before = stats.nonfinite
            stats.add(index, columns[metric], metric in FLOAT_METRICS)
            if stats.nonfinite > before:
                bad_updates.update(
                    u
                    for u, v in zip(index, columns[metric], strict=True)
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


def scan_log(path: Path, thresholds: Thresholds) -> LogScan:
    """Read the whole log at ``path`` once. Raises EventLogError for unusable input."""
    scan = LogScan(path, thresholds)
    reader = EventLogReader(path)
    for batch in reader.batches():
        scan.feed(batch)
    if not scan.run_started:
        raise NoRunStarted(
            f"{path}: no run_started event in {reader.line_no} line(s); not the event log of a run"
        )
    return scan
