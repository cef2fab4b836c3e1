"""``sanctum RUN --once [--json]``: the dashboard's state, printed once, for scripts.

The log is read to its end through the same reader and aggregator as the dashboard, and
the snapshot is judged at the current time (so a silent unfinished run reads STALE).
Each metric's row says where it stands in one word: its level, ``not judged`` when no
rule judges it, ``not measured`` when the latest update did not measure it (``--json``:
``status``; its ``level`` is the rule's level, ``null`` where the status is ``not judged``
or ``not measured``: no level stands for a metric nothing judged). The
verdict is the run's, ``sanctum check``'s under the same ``--fail-on`` (so far, while the
run is live, with the level at the latest update beside it), as the banner shows it.
The text is what the dashboard shows, line by line: the banner's two lines, one line per
metric of the health panel, the panel's facts, the episode return and the last events of
the timeline. ``--json`` prints the same as one object. No Textual: this is meant for
tmux status lines, cron jobs and ``ssh host sanctum RUN --once | head -2``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from sanctum.formatting import NOT_JUDGED, NOT_MEASURED, visible_lines
from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.reports.scan import no_run_started
from sanctum.run_files import UsageError
from sanctum.text.panels import (
    clock_text,
    connection_text,
    entry_text,
    facts_lines,
    kl_text,
    level_word,
    metric_row,
    panel_metrics,
    returns_lines,
    run_text,
    steps_text,
    verdict_line,
)
from telemetry.eventlog import open_reader

UNJUDGED_WORDS: Final = frozenset({NOT_JUDGED, NOT_MEASURED})
"""The statuses under which a metric's ``--json`` ``level`` is ``null``: no rule judged it."""
TIMELINE_LINES = 5
"""Events of the timeline printed (the newest)."""
SPARK_WIDTH = 20


def read_snapshot(
    path: Path,
    thresholds: Thresholds,
    now: Callable[[], float] = time.time,
    fail_on: Level = Level.CRITICAL,
) -> SanctumSnapshot:
    """The whole log at ``path`` folded into one snapshot, judged at ``now()``. A file
    that holds bytes but no ``run_started`` is refused (UsageError, exit 2) as ``check``
    refuses it; an empty one is a log a trainer has only just created (WAITING)."""
    if not path.exists():
        raise UsageError(f"{path}: no such event log")
    reader = open_reader(path)
    aggregator = SanctumAggregator(thresholds, fail_on=fail_on)
    for batch in reader.batches(snapshot=True):  # a file that keeps growing: up to its size now
        aggregator.handle_batch(batch)
    snapshot = aggregator.snapshot(now())
    if snapshot.run.run_id is None and reader.size:  # bytes, but never a run's first line
        tail = aggregator.integrity.tail
        lines = tail[0] - 1 if tail else reader.line_no  # no 2nd pass
        raise UsageError(no_run_started(path, lines, reader.skipped))
    return snapshot


def once_text(snapshot: SanctumSnapshot, path: Path) -> str:
    """The dashboard as plain lines: banner, metric table, facts, returns, last events."""
    banner = [
        f"{connection_text(snapshot)}  {run_text(snapshot, path)}  {clock_text(snapshot)}",
        f"{verdict_line(snapshot)}  {kl_text(snapshot)}  {_progress(snapshot)}"
        f"{steps_text(snapshot)}",
    ]
    table = []
    for name in _metrics(snapshot):
        row, word = metric_row(snapshot, name), level_word(snapshot, name)
        if row.display:
            value = "" if word == NOT_MEASURED else row.value  # the word says it once
            line = f"{row.label:<22} {value:>12}  {word:<12} {row.note:<11} {row.arrow}"
            table.append(line.rstrip())
    returns = returns_lines(snapshot, SPARK_WIDTH)
    events = [entry_text(e, snapshot.run.started_ts) for e in snapshot.timeline[-TIMELINE_LINES:]]
    lines = [*banner, "", *table, "", *facts_lines(snapshot), "", "return  " + returns[0]]
    lines += returns[2:]
    if events:
        lines += ["", "last events:", *events]
    return visible_lines(lines)


def once_dict(snapshot: SanctumSnapshot) -> dict[str, Any]:
    """The same state as one JSON-ready object (non-finite numbers as strings)."""
    run = snapshot.run
    metrics = {}
    for name in _metrics(snapshot):
        metric = snapshot.metric(name)
        if metric_row(snapshot, name).display:
            status = level_word(snapshot, name)
            metrics[name] = {
                "value": metric.value,
                "level": None if status in UNJUDGED_WORDS else metric.level.value,
                "status": status,
                "statistic": metric.statistic,
                "note": metric.note,
                "trend": metric.direction,
            }
    return {
        "run_id": run.run_id,
        "env_id": run.env_id,
        "connection": snapshot.connection.value,
        **snapshot.run_verdict.fields(),
        "worst_level": snapshot.run_verdict.level.value,
        "now_verdict": snapshot.health.verdict,
        "now_level": snapshot.health.worst.value,
        "update": snapshot.update,
        "global_step": run.global_step,
        "step_unit": run.step_unit,
        "total_steps": run.total_steps,
        "progress": run.progress,
        "steps_per_second": run.steps_per_second,
        "elapsed_seconds": run.elapsed(snapshot.now),
        "episodes": run.episodes,
        "episode_return": run.episode_return,
        "early_stops": snapshot.early_stops,
        "metrics": metrics,
        "timeline": [
            {"kind": e.kind, "level": e.level.value, "update": e.update, "text": e.text}
            for e in snapshot.timeline[-TIMELINE_LINES:]
        ],
    }


def _metrics(snapshot: SanctumSnapshot) -> tuple[str, ...]:
    """The panel's metrics, then any other that went bad (as the panel adds them)."""
    table = panel_metrics(snapshot.thresholds)
    fired = tuple(m for m in snapshot.health.fired if m not in table and m in snapshot.metrics)
    return table + fired


def _progress(snapshot: SanctumSnapshot) -> str:
    progress = snapshot.run.progress
    return "" if progress is None else f"{progress:.0%}  "
