"""Where Sanctum's time goes, stage by stage: ``summary`` (what ``check`` runs too) and the
replay (the dashboard's feed, one snapshot per reader batch) of one generated log.

    python bench/sanctum_stages.py [--events 200000]

The log is made as ``sanctum_bench.py`` makes it (every field of every update set). Each
path runs once in this process with a CPU-time stopwatch around the calls that make a
stage (per reader batch, never per event, so the watch costs nothing worth counting):

- read: the reader's decode (``EventLogReader.read_new``);
- fold: the aggregator folding the events of a batch into the run's state, judging left out;
- cut: cutting the queued updates into one column per metric (``metric_columns``);
- rules: the health rules' statistics, streaks and tallies (``RuleJudge.fold``);
- stats and contracts: every metric's final, smallest, largest and non-finite count, and
  the range contracts (the rest of ``HealthJudge.fold``);
- verdict: the run's verdict rows (``run_verdict``);
- snapshot: the frozen snapshot less its verdict (replay only);
- document: the summary document from the scanned log (summary only).

Figures are CPU seconds and each stage's share of the path, then the same over the
reader's own CPU time (the ``*_over_reader_cpu`` figures of ``sanctum_bench.py`` are the
totals). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sanctum.model.aggregator as aggregator_module
from lib.stopwatch import Stopwatch
from sanctum.health.judge import HealthJudge
from sanctum.health.rule_judge import RuleJudge
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.aggregator import SanctumAggregator
from sanctum.reports import summary as summary_module
from sanctum.reports.summary import build_summary
from sanctum_bench import generate
from telemetry.eventlog import EventLogReader

STAGES = ("read", "fold", "cut", "rules", "stats and contracts", "verdict", "snapshot", "document")


@contextmanager
def timed_stages(watch: Stopwatch) -> Iterator[None]:
    """Wrap each stage's callables for the duration (put back after)."""
    patches = [
        (EventLogReader, "read_new", "read"),
        (SanctumAggregator, "handle_batch", "fold"),
        (aggregator_module, "metric_columns", "cut"),
        (HealthJudge, "fold", "stats and contracts"),
        (RuleJudge, "fold", "rules"),
        (SanctumAggregator, "run_verdict", "verdict"),
        (SanctumAggregator, "snapshot", "snapshot"),
        (summary_module, "summarize", "document"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, stage in patches:
        setattr(owner, name, watch.wrap(stage, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def replay(path: Path) -> None:
    agg = SanctumAggregator(DEFAULT_THRESHOLDS)
    for batch in EventLogReader(path).batches():
        agg.handle_batch(batch)
        agg.snapshot(time.time())


def reader_cpu(path: Path) -> float:
    start = time.process_time()
    for _ in EventLogReader(path).batches():
        pass
    return time.process_time() - start


def stages_of(run: Callable[[], Any]) -> tuple[float, dict[str, float]]:
    """Total CPU seconds of ``run()`` and its time by stage."""
    watch = Stopwatch()
    with timed_stages(watch):
        start = time.process_time()
        run()
        total = time.process_time() - start
    return total, {stage: watch.seconds.get(stage, 0.0) for stage in STAGES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    figures: dict[str, Any] = {"events": args.events}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        generate(path, args.events)
        reader = min(reader_cpu(path) for _ in range(2))
        figures["reader_cpu_seconds"] = round(reader, 3)
        print(f"reader alone: {reader:.3f} s CPU ({args.events / reader:,.0f} events/s)")
        paths = {
            "summary": lambda: build_summary(path, DEFAULT_THRESHOLDS),
            "replay": lambda: replay(path),
        }
        for name, run in paths.items():
            total, seconds = stages_of(run)
            print(f"\n{name}: {total:.3f} s CPU, {total / reader:.2f}x the reader")
            print(f"  {'stage':<22}{'CPU s':>8}{'share':>8}{'x reader':>10}")
            rows = {}
            for stage in STAGES:
                spent = seconds[stage]
                if spent <= 0 and stage in ("snapshot", "document"):
                    continue
                rows[stage] = round(spent, 3)
                print(f"  {stage:<22}{spent:>8.3f}{spent / total:>8.0%}{spent / reader:>10.2f}")
            other = total - sum(rows.values())
            rows["other"] = round(other, 3)
            print(f"  {'other':<22}{other:>8.3f}{other / total:>8.0%}{other / reader:>10.2f}")
            figures[name] = {
                "cpu_seconds": round(total, 3),
                "over_reader": round(total / reader, 2),
            }
            figures[name]["stages"] = rows
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
