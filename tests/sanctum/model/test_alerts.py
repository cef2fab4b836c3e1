"""Alerts from the fold: one per change of the run's level, never one per update; a stall
seen by the clock while live and at the event that ended it in a recorded log; every text
escaped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.alert_history import append_alerts, history_path, read_alerts
from sanctum.model.alerts import Alert, AlertTracker, recorded_alerts
from telemetry.eventlog import open_reader
from tests.sanctum.logs import (
    KL_CRITICAL,
    KL_HOLDS,
    KL_WARNING,
    RunLog,
    an_alert,
    kl_breach,
    write_run,
)

HOSTILE_ID = "evil\x1b[2J<!here>"


def _changes(alerts: list[Alert]) -> list[tuple[str, str, str | None]]:
    return [(a.change, a.verdict, a.rule) for a in alerts]


def _recorded(path: Path) -> list[Alert]:
    return recorded_alerts(path, SanctumAggregator(DEFAULT_THRESHOLDS))


def test_a_breach_held_for_many_updates_is_one_alert(tmp_path: Path) -> None:
    log = write_run(tmp_path / "events.jsonl", 30, kl_breach(5, KL_CRITICAL, 20))
    assert _changes(_recorded(log)) == [("critical", "FAIL", "KL"), ("recovered", "OK", None)]


def test_warning_then_critical_then_recovery_each_once(tmp_path: Path) -> None:
    def overrides(u: int) -> dict[str, float]:
        if 5 <= u < 5 + KL_HOLDS:
            return dict(KL_WARNING)
        return dict(KL_CRITICAL) if 5 + KL_HOLDS <= u < 5 + 3 * KL_HOLDS else {}

    log = write_run(tmp_path / "events.jsonl", 30, overrides)
    assert [a.change for a in _recorded(log)] == ["warning", "critical", "recovered"]


def test_a_run_that_ended_failed_is_an_alert(tmp_path: Path) -> None:
    log = write_run(tmp_path / "events.jsonl", 10, finish="failed")
    [ended] = _recorded(log)
    assert (ended.change, ended.verdict, ended.rule) == ("ended", "FAIL", "run_finished")
    assert ended.line.endswith("stopped by the test · run verdict FAIL: run failed")


def test_a_completed_healthy_run_has_no_alert(tmp_path: Path) -> None:
    assert _recorded(write_run(tmp_path / "events.jsonl", 10)) == []


def test_a_live_stall_is_seen_by_the_clock_and_its_end_is_a_recovery(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(8):
        log.update(u)
    aggregator = SanctumAggregator(DEFAULT_THRESHOLDS)
    tracker = AlertTracker(aggregator, path)
    reader = open_reader(path)
    aggregator.handle_batch(reader.read_new(), tracker.after)
    assert tracker.at(log.now) == []
    silent_until = log.now + 100_000
    [stalled] = tracker.at(silent_until)
    assert (stalled.change, stalled.rule, stalled.ts) == ("stalled", "Stall", silent_until)
    assert tracker.at(silent_until + 1) == []  # said once
    log.now = silent_until
    log.update(8)
    aggregator.handle_batch(reader.read_new(), tracker.after)
    assert _changes(tracker.take()) == [("recovered", "OK", None)]


def test_a_recorded_stall_lists_as_the_live_one_did(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "events.jsonl", run_id=HOSTILE_ID)
    log.start()
    for u in range(8):
        log.update(u)
    log.now = log.now + 100_000
    log.update(8)
    log.finish("completed")
    log.close()
    alerts = _recorded(log.path)
    assert _changes(alerts) == [("stalled", "FAIL", "Stall"), ("recovered", "OK", None)]
    assert all(a.line.startswith("evil\\x1b[2J<!here>: ") for a in alerts)  # escaped
    assert all(a.run == "evil\\x1b[2J<!here>" for a in alerts)


def test_an_alert_history_that_is_not_a_file_is_no_history(tmp_path: Path) -> None:
    """A run folder is untrusted: a FIFO where alerts.jsonl should be never blocks a
    reader; it reads as no history."""
    events = tmp_path / "events.jsonl"
    os.mkfifo(history_path(events))
    assert read_alerts(events) is None


def test_appending_to_a_history_that_is_not_a_file_fails_at_once(tmp_path: Path) -> None:
    """A FIFO with no reader where the watcher appends: an OSError (said once by the
    watcher), never a write that waits forever."""
    events = tmp_path / "events.jsonl"
    os.mkfifo(history_path(events))
    alert = an_alert(run="r", path=str(events))
    with pytest.raises(OSError):  # noqa: PT011 (ENXIO, or not a regular file)
        append_alerts(events, [alert])
