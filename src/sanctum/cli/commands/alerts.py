"""``sanctum alerts RUN [--since TIME] [--json]``: the changes of a run's health, oldest first.

What a watcher appended to the run's ``alerts.jsonl``; for a run nobody watched, the same
changes derived from its event log (folded as the watcher folds it), so a script or an
agent can ask what went wrong and when. ``--since`` takes seconds since the epoch or an
ISO 8601 time (without a zone: local time).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING

from sanctum.cli.command import Command, add_json, fail_on
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK
from sanctum.run_files import resolve_run

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds


def since_time(text: str) -> float:
    """``--since TIME``: seconds since the epoch, or an ISO 8601 time."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(
            "expected seconds since the epoch or an ISO 8601 time (2026-11-29T14:00)"
        ) from None


def _add_arguments(alerts: argparse.ArgumentParser) -> None:
    alerts.add_argument("run", metavar="RUN")
    alerts.add_argument(
        "--since", type=since_time, metavar="TIME", help="only the changes at or after TIME"
    )
    add_json(alerts, "one JSON object: the run, where the alerts come from, and the alerts")


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    import msgspec

    from sanctum.formatting import dumps
    from sanctum.model.aggregator import SanctumAggregator
    from sanctum.model.alert_history import history_path, read_alerts
    from sanctum.model.alerts import recorded_alerts

    path = resolve_run(args.run)
    alerts = read_alerts(path)
    source = str(history_path(path))
    if alerts is None:
        alerts = recorded_alerts(path, SanctumAggregator(thresholds, fail_on=fail_on(args)))
        source = str(path)
    if args.since is not None:
        alerts = [a for a in alerts if a.ts >= args.since]
    if args.json:
        document = {"run": str(path), "source": source, "alerts": msgspec.to_builtins(alerts)}
        emit(dumps(document))
        return EXIT_OK
    lines = [
        f"{datetime.fromtimestamp(a.ts).isoformat(timespec='seconds')}  {a.line}" for a in alerts
    ]
    emit("\n".join(lines) if lines else "no change of health")
    return EXIT_OK


COMMAND = Command(
    "alerts", "the changes of a run's health (what a watcher sent)", _add_arguments, _run
)
