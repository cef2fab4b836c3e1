"""The whole-log scan: its fast column passes agree with ``level_of`` value by value, and it
describes the last run of a file that starts over."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from sanctum.health import Level, level_of
from sanctum.scan import EarlierRun, LogScan, MetricStats, RuleTally, measured, scan_log
from sanctum.thresholds import DEFAULT_THRESHOLDS, Rule
from telemetry.eventlog import ReadBatch, read_events
from telemetry.events import Event, RunStarted
from tests.sanctum.logs import write_two_runs

SPECIALS = [None, math.nan, math.inf, -math.inf]


def column(rng: random.Random, rule: Rule, n: int, specials: bool) -> list[float | None]:
    """Values around the rule's thresholds, exact edges included, and some specials."""
    edges = [
        rule.warning,
        rule.critical,
        math.nextafter(rule.warning, math.inf),
        math.nextafter(rule.critical, -math.inf),
    ]
    out: list[float | None] = []
    for _ in range(n):
        r = rng.random()
        if specials and r < 0.05:
            out.append(rng.choice(SPECIALS))
        elif r < 0.15:
            out.append(rng.choice(edges))
        else:
            out.append(rng.uniform(2 * min(rule.critical, 0) - 1, 2 * max(rule.critical, 1)))
    return out


def reference(rule: Rule, batches: list[tuple[list[int], list[float | None]]]) -> dict[str, object]:
    """The obvious loop: level_of on every value; the worst is the first most extreme."""
    out: dict[str, object] = dict(
        measured=0,
        judged=0,
        at_warning=0,
        at_critical=0,
        first_warning=None,
        first_critical=None,
        worst=None,
        worst_update=None,
    )
    for updates, values in batches:
        for u, v in zip(updates, values, strict=True):
            if v is None:
                continue
            out["measured"] += 1  # type: ignore[operator]
            level = level_of(rule, v, u)
            if level is Level.PENDING:
                continue
            out["judged"] += 1  # type: ignore[operator]
            if level is not Level.HEALTHY:
                key = "critical" if level is Level.CRITICAL else "warning"
                out[f"at_{key}"] += 1  # type: ignore[operator]
                if out[f"first_{key}"] is None:
                    out[f"first_{key}"] = u
            worst = out["worst"]
            assert worst is None or isinstance(worst, float)
            if worst is None or (
                math.isfinite(worst) and (not math.isfinite(v) or rule.is_worse(v, worst))
            ):
                out["worst"], out["worst_update"] = v, u
    return out


def tally_of(rule: Rule, batches: list[tuple[list[int], list[float | None]]]) -> dict[str, object]:
    tally = RuleTally(rule)
    for updates, values in batches:
        numbers, total = measured(values)
        tally.add(updates, values, numbers, total)
    return {k: getattr(tally, k) for k in reference(rule, [])}


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    def norm(x: object) -> object:
        return "nan" if isinstance(x, float) and math.isnan(x) else x

    return {k: norm(v) for k, v in a.items()} == {k: norm(v) for k, v in b.items()}


@pytest.mark.parametrize("rule", DEFAULT_THRESHOLDS.rules, ids=lambda r: r.metric)
@pytest.mark.parametrize("specials", [False, True])
def test_tally_matches_level_of_on_every_value(rule: Rule, specials: bool) -> None:
    rng = random.Random(f"{rule.metric}{specials}")
    for trial in range(30):
        batches, start = [], 0
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(0, 40)
            batches.append((list(range(start, start + n)), column(rng, rule, n, specials)))
            start += n
        assert same(tally_of(rule, batches), reference(rule, batches)), (trial, batches)


def test_tally_healthy_column_takes_the_fast_path_and_keeps_the_worst() -> None:
    kl = DEFAULT_THRESHOLDS.rule("approx_kl")
    assert kl is not None
    values: list[float | None] = [0.001, 0.004, 0.002, 0.004]
    result = tally_of(kl, [([0, 1, 2, 3], values)])
    assert result == dict(
        measured=4,
        judged=4,
        at_warning=0,
        at_critical=0,
        first_warning=None,
        first_critical=None,
        worst=0.004,
        worst_update=1,
    )


def test_metric_stats_match_a_plain_loop() -> None:
    rng = random.Random(7)
    stats = MetricStats()
    seen: list[tuple[int, float]] = []
    start = 0
    for _ in range(20):
        n = rng.randint(0, 30)
        values = [
            rng.choice(SPECIALS) if rng.random() < 0.1 else rng.uniform(-5, 5) for _ in range(n)
        ]
        updates = list(range(start, start + n))
        start += n
        numbers, total = measured(values)
        stats.add(updates, values, numbers, total, floats=True)
        seen += [(u, v) for u, v in zip(updates, values, strict=True) if v is not None]
    finite = [v for _, v in seen if math.isfinite(v)]
    bad = [u for u, v in seen if not math.isfinite(v)]
    assert stats.measured == len(seen)
    assert stats.final_update == seen[-1][0]
    assert stats.final is not None
    assert stats.final == seen[-1][1] or (math.isnan(stats.final) and math.isnan(seen[-1][1]))
    assert (stats.minimum, stats.maximum) == (min(finite), max(finite))
    assert (stats.nonfinite, stats.first_nonfinite) == (len(bad), bad[0])


def test_measured_spots_missing_values() -> None:
    complete: list[float | None] = [1.0, 2.0]
    numbers, total = measured(complete)
    assert numbers is complete
    assert total == 3.0
    assert measured([1.0, None, 2.5]) == ([1.0, 2.5], 3.5)
    assert measured([None]) == ([], 0)


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
    assert expected.tallies["approx_kl"].worst == 0.001
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
    assert whole.tallies["approx_kl"].at_critical == 0  # run-a's KL 0.5 is not counted


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
