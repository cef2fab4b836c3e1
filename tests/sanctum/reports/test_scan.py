"""The whole-log scan describes the last run of a file that starts over, wherever the
reader's batches split it (the judging itself is tested in test_judge.py)."""

from __future__ import annotations

from pathlib import Path

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.ledger import EarlierRun
from sanctum.reports.scan import LogScan, scan_log
from telemetry.eventlog import ReadBatch, read_events
from telemetry.events import Event, RunStarted
from tests.sanctum.logs import HEALTHY, write_two_runs


def scan_facts(scan: LogScan) -> tuple[object, ...]:
    """Everything a scan judges a run by (not the file facts: skipped lines, earlier runs)."""
    return (
        scan.tallies,
        scan.stats,
        scan.nonfinite_updates,
        scan.first_nonfinite_update,
        scan.early_stops,
        scan.anomalies,
        scan.best_return,
        scan.updates_seen,
        scan.early_stop_count,
        scan.aggregator.run.anomalies_critical,
        scan.aggregator.run.run_id,
    )


def events_of(path: Path) -> list[Event]:
    return read_events(path).events


def test_a_second_run_in_the_file_replaces_the_first_wherever_the_batches_split(
    tmp_path: Path,
) -> None:
    both, alone = tmp_path / "both.jsonl", tmp_path / "alone.jsonl"
    write_two_runs(both)
    run_b = events_of(both)[-10:]  # run_started, 4 x (rollout, update), run_finished
    assert isinstance(run_b[0], RunStarted) and run_b[0].run_id == "run-b"
    expected = LogScan(alone, DEFAULT_THRESHOLDS)
    expected.feed(ReadBatch(run_b))
    assert expected.tallies["approx_kl"].worst == 0.001 / HEALTHY["clip_fraction"]  # run-b's
    events = events_of(both)
    for split in range(len(events) + 1):
        scan = LogScan(both, DEFAULT_THRESHOLDS)
        scan.feed(ReadBatch(events[:split]))
        scan.feed(ReadBatch(events[split:]))
        assert scan_facts(scan) == scan_facts(expected), split
        assert scan.earlier_runs == [
            EarlierRun("run-a", 6, "a new run run-b started in the same log", new_run=True)
        ]
    whole = scan_log(both, DEFAULT_THRESHOLDS)
    assert scan_facts(whole) == scan_facts(expected)
    assert whole.tallies["approx_kl"].at_critical == 0  # run-a's critical KL is not counted


def test_a_file_that_starts_over_is_scanned_from_its_new_content(tmp_path: Path) -> None:
    both = tmp_path / "both.jsonl"
    write_two_runs(both)
    events = events_of(both)
    run_a, run_b = events[:-10], events[-10:]
    expected = LogScan(both, DEFAULT_THRESHOLDS)
    expected.feed(ReadBatch(run_b))
    scan = LogScan(both, DEFAULT_THRESHOLDS)
    scan.feed(ReadBatch(run_a))
    scan.feed(ReadBatch(run_b, reset="e.jsonl was truncated to 0 bytes"))
    assert scan_facts(scan) == scan_facts(expected)
    assert scan.earlier_runs == [
        EarlierRun("run-a", 6, "e.jsonl was truncated to 0 bytes", new_run=False)
    ]
    gone = LogScan(both, DEFAULT_THRESHOLDS)
    gone.feed(ReadBatch(run_a))
    gone.feed(ReadBatch(reset="replaced"))
    assert not gone.run_started  # the new file has no run_started (yet): not a run's log
