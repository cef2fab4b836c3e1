"""What a report lists one by one: early stops, anomalies, runs a log started over after.

The aggregator keeps these for ``sanctum check`` and ``sanctum summary`` as it folds the
log (bounded by :data:`KEPT`; counts are always complete), so the reports read the same
fold as the dashboard instead of scanning the log a second way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

KEPT: Final = 1000
"""Early stops and anomalies listed individually (all are counted; skipped lines have their
own cap, :data:`telemetry.eventlog.SKIPPED_KEPT`)."""


@dataclass(frozen=True, slots=True)
class AnomalyRecord:
    """An anomaly the trainer reported."""

    update: int | None
    severity: str
    metric: str
    value: float | None
    message: str


@dataclass(frozen=True, slots=True)
class EarlierRun:
    """A run the aggregator forgot because the log started over after it."""

    run_id: str | None
    updates: int
    why: str
    """The reset reason: a new run started, or the file was truncated/replaced."""
    new_run: bool
    """True when a ``run_started`` of another run followed it in the same file (the file
    holds both); False when the file itself was truncated or replaced (it is gone)."""


@dataclass
class RunRecords:
    """The listed facts of one run."""

    early_stops: list[tuple[int, str]] = field(default_factory=list)
    """(update, reason) of the first KEPT early stops."""
    anomalies: list[AnomalyRecord] = field(default_factory=list)
    """The first KEPT anomalies."""
    best_return: float | None = None
    """Best finite mean episode return of a rollout."""

    def early_stop(self, update: int, reason: str) -> None:
        if len(self.early_stops) < KEPT:
            self.early_stops.append((update, reason))

    def anomaly(self, record: AnomalyRecord) -> None:
        if len(self.anomalies) < KEPT:
            self.anomalies.append(record)

    def episode_return(self, value: float) -> None:
        if math.isfinite(value) and (self.best_return is None or value > self.best_return):
            self.best_return = value
