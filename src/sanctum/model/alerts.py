"""Alerts: the changes of a run's health, one record per change, never one per update.

An :class:`AlertTracker` watches one :class:`~sanctum.model.aggregator.SanctumAggregator`
fold its log event by event and says when the run's level *now* (the aggregator's
:meth:`~sanctum.model.aggregator.SanctumAggregator.health`, the banner's level) changes:
``warning``, ``critical``, ``recovered`` (back to healthy), ``stalled`` (silent past its
stall limit) and ``ended`` (a ``run_finished`` that is not ``completed``). The run's own
verdict (``check``'s) is cumulative, so it never recovers; each alert carries it beside
the level, as ``check`` says it so far.

The same tracker serves the live watcher (``sanctum watch --notify``) and ``sanctum
alerts`` on a log nobody watched: both fold the log the same way, so both list the same
changes (a live stall is seen by the clock, a recorded one at the event that ended it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

import msgspec

from sanctum.formatting import format_value, visible
from sanctum.health.levels import HealthReport, Level
from sanctum.model.aggregator import STALL_LABEL, SanctumAggregator
from telemetry.eventlog import open_reader
from telemetry.events import Event, PPOUpdate, RunFinished

Change = Literal["warning", "critical", "recovered", "stalled", "ended"]
AlertWord = Literal["OK", "WARN", "FAIL"]

_CHANGE_OF: Final[dict[Level, Change]] = {
    Level.HEALTHY: "recovered",
    Level.WARNING: "warning",
    Level.CRITICAL: "critical",
}
_WORD_OF: Final[dict[Level, AlertWord]] = {
    Level.HEALTHY: "OK",
    Level.WARNING: "WARN",
    Level.CRITICAL: "FAIL",
}
ENDED_RULE: Final = "run_finished"
"""The rule an ``ended`` alert names."""


class Alert(msgspec.Struct, frozen=True, kw_only=True, tag="alert"):
    """One change of a run's health: a line of ``alerts.jsonl`` and the JSON a webhook gets."""

    run: str
    """The run's id (``run_started.run_id``)."""
    path: str
    """The run's event log."""
    change: Change
    """What changed: ``warning``, ``critical``, ``recovered``, ``stalled`` or ``ended``."""
    verdict: AlertWord
    """The run's level after the change, as a word: ``OK``, ``WARN`` or ``FAIL``."""
    rule: str | None
    """The rule that fired (its label: ``KL``, ``Stall``), or ``run_finished``; None for
    a recovery."""
    update: int | None
    """The latest update when it changed."""
    step: int | None
    """The run's ``global_step`` when it changed."""
    value: float | None
    """The fired rule's metric at ``update`` (None for a check, a recovery or an end)."""
    line: str
    """The alert in one line, escaped (what a person reads)."""
    ts: float
    """When it changed: the event's time, or the clock's for a live stall."""
    check: str
    """The run's verdict so far, as ``check`` says it (``FAIL: KL 3x``)."""


class AlertTracker:
    """The alerts of one run, from its aggregator's fold (see the module docstring)."""

    def __init__(self, aggregator: SanctumAggregator, path: Path) -> None:
        self.aggregator = aggregator
        self.path = path
        self.level = Level.PENDING
        """The level last alerted (PENDING: nothing judged yet, nothing sent)."""
        self.stalled = False
        self._stalls = 0
        self._pending: list[Alert] = []

    def after(self, event: Event) -> None:
        """Look at the run once ``event`` is folded (the aggregator's ``after`` hook)."""
        run = self.aggregator.run
        if run.stalls > self._stalls:  # a silence the log shows, ended by this event
            self._stalls = run.stalls
            if not self.stalled:
                self._stall(event.ts)
        match event:
            case RunFinished(payload=p) if p.status != "completed":
                self._alert("ended", Level.CRITICAL, ENDED_RULE, None, event.ts, p.reason)
                self.level, self.stalled = Level.CRITICAL, False
                return
            case PPOUpdate():
                pass
            case _ if not self.stalled:
                return
        self._judge(self.aggregator.health(), event.ts)

    def at(self, now: float) -> list[Alert]:
        """The alerts a look at the clock adds (a live run silent past its stall limit),
        then every alert since the last call."""
        agg = self.aggregator
        if not self.stalled and agg.health(now).level("stall") is Level.CRITICAL:
            self._stall(now)
        return self.take()

    def take(self) -> list[Alert]:
        """The alerts since the last call, oldest first."""
        alerts, self._pending = self._pending, []
        return alerts

    def _stall(self, ts: float) -> None:
        self.stalled = True
        self.level = Level.CRITICAL
        self._alert("stalled", Level.CRITICAL, STALL_LABEL, None, ts)

    def _judge(self, report: HealthReport, ts: float) -> None:
        level = report.worst
        was_stalled, self.stalled = self.stalled, False
        if was_stalled and level is Level.PENDING:
            level = Level.HEALTHY  # a stall before any update was judged has ended
        quiet = self.level is Level.PENDING and level is Level.HEALTHY  # a healthy start
        if level is Level.PENDING or quiet or (level == self.level and not was_stalled):
            self.level = level if quiet else self.level
            return
        self.level = level
        metric = next((m for m in report.fired if report.level(m) is level), None)
        rule = None if metric is None else self.aggregator.thresholds.rule(metric)
        label = metric if rule is None else rule.label
        latest = self.aggregator.tamiyo.latest
        value = getattr(latest, metric, None) if metric is not None else None
        self._alert(
            _CHANGE_OF[level],
            level,
            label,
            value if isinstance(value, float) else None,
            ts,
        )

    def _alert(
        self,
        change: Change,
        level: Level,
        rule: str | None,
        value: float | None,
        ts: float,
        reason: str | None = None,
    ) -> None:
        agg = self.aggregator
        run = agg.run
        latest = agg.tamiyo.latest
        update = None if latest is None else latest.update
        check = agg.run_verdict(ts).text
        run_id = run.run_id or self.path.parent.name
        said = f"{_WORD_OF[level]} {change}"
        if rule is not None and change != "recovered":
            said += f": {rule}"
        if update is not None:
            said += f" at update {update}"
        if value is not None:
            said += f" ({format_value(value)})"
        if reason:
            said += f": {reason}"
        line = visible(f"{run_id}: {said} · run verdict {check}")
        self._pending.append(
            Alert(
                run=visible(run_id),
                path=str(self.path),
                change=change,
                verdict=_WORD_OF[level],
                rule=None if change == "recovered" else rule,
                update=update,
                step=run.global_step,
                value=value,
                line=line,
                ts=ts,
                check=visible(check),
            )
        )


def recorded_alerts(path: Path, aggregator: SanctumAggregator) -> list[Alert]:
    """The alerts of the log at ``path`` folded whole into ``aggregator`` (a fresh one):
    what a watcher would have sent, for a run nobody watched."""
    tracker = AlertTracker(aggregator, path)
    reader = open_reader(path)
    while batch := reader.read_new():
        aggregator.handle_batch(batch, tracker.after)
    return tracker.take()
