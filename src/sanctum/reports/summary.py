"""``sanctum summary``: what happened in a run, from its log, in one screen or one JSON object.

Built as one JSON-ready document from a :class:`LogScan` (so ``--json`` and the text show
the same facts), then printed. Final and worst values come from the same rule table as the
dashboard and ``check``; "not measured" metrics say so instead of showing a zero. The
verdict is the run's, ``check``'s under the same ``--fail-on`` (so far, for a run still
live when the summary is made), beside the level at the latest update.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Final

from sanctum.formatting import (
    NOT_MEASURED,
    SHORT_ABSENT,
    format_anomaly,
    format_metric,
    format_value,
    plural,
    steps_count,
    steps_rate,
    visible_lines,
)
from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.metrics import can_have
from sanctum.model.checks import doubts, lost_counts, outcome_unknown
from sanctum.model.snapshot import progress_of
from sanctum.reports.documents import (
    earlier_runs,
    early_stops,
    final_cell,
    not_judged_line,
    rule_tallies,
    run_facts,
    skip_counts,
    skipped_fields,
)
from sanctum.reports.scan import LogScan, scan_log
from sanctum.reports.table import GAP, right, table_lines
from sanctum.text.run_table import Column
from telemetry.returns import BEST_ROLLOUT_MEAN, FINAL_RETURN

TEXT_LIST_LIMIT = 20
"""Early stops, anomalies and skipped lines printed in the text form (JSON lists what the
fold kept: ``records.KEPT`` early stops and anomalies, ``SKIPPED_KEPT`` skipped lines)."""


def build_summary(
    path: Path,
    thresholds: Thresholds,
    fail_on: Level = Level.CRITICAL,
    now: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Scan ``path`` and summarise it, at time ``now()`` (a run silent no longer than its
    stall limit is live: judged so far). Raises EventLogError for unusable input."""
    return summarize(scan_log(path, thresholds), fail_on, now())


def utc_text(ts: float | None) -> str:
    """A log's time (seconds since 1970) as a UTC date; ``unknown`` when it has none or
    one no calendar holds (Infinity, NaN, 1e300: a log may say anything)."""
    if ts is None:
        return "unknown"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))
    except (OverflowError, OSError, ValueError):
        return f"unknown (ts {ts:g} is not a date)"


def summarize(
    scan: LogScan, fail_on: Level = Level.CRITICAL, now: float | None = None
) -> dict[str, Any]:
    """The summary document of a scanned log (pure); ``now``: when it is made (None: the
    log is judged as a finished file, as ``check`` judges it)."""
    agg = scan.aggregator
    lost, short = lost_counts(agg)
    return {
        "path": str(scan.path),
        "run": run_facts(scan).to_json(),
        **agg.run_verdict(now, fail_on).fields(),
        "fail_on": fail_on.value,
        "latest_verdict": agg.health().verdict,
        "rules": [tally.to_json() for tally in rule_tallies(scan)],
        "metrics": {metric: asdict(stats) for metric, stats in scan.stats.items()},
        "early_stops": early_stops(scan),
        "anomalies": {
            "critical": agg.run.anomalies_critical,
            "warning": agg.run.anomalies_warning,
            "listed": [asdict(a) for a in scan.anomalies],
        },
        **skipped_fields(skip_counts(scan)),
        "earlier_runs": earlier_runs(scan),
        "resets": agg.integrity.resets,
        "seq_gaps": agg.run.seq_gaps,
        "lost_events": lost,
        "missing_updates": short,
        "foreign_events": agg.run.foreign_events,
        "foreign_runs": dict(agg.run.foreign_runs),
        "source_unread": list(agg.run.source_unread),
        "failures_reported": agg.run.failures_reported,
        "doubts": doubts(agg),
        "outcome_unknown": outcome_unknown(agg),
        "judged_bytes": scan.judged_bytes,
        "file_bytes": scan.file_bytes,
        "grew_while_read": scan.size_after > scan.file_bytes,
    }


def format_text(doc: dict[str, Any]) -> str:
    """The summary for a terminal (numbers to 4 significant digits, NaN/Inf as such)."""
    return visible_lines([*_facts(doc), "", *_rules(doc), "", *_metrics(doc), *_lists(doc)])


def _facts(doc: dict[str, Any]) -> list[str]:
    r = doc["run"]
    ident = ", ".join(
        f"{k} {v}"
        for k, v in (
            ("env", r["env_id"]),
            ("seed", r["seed"]),
            ("trainer", r["trainer"]),
            ("schema", r["schema"]),
        )
        if v is not None
    )
    started = utc_text(r["started_ts"])
    status = r["status"] or "no events"
    if r["status"] == "running":
        status = "no run_finished (still running, or cut off)"
        if doc.get("outcome_unknown"):
            status = f"outcome not recorded ({doc['outcome_unknown']})"
    if r["reason"]:
        status += f": {r['reason']}"
    steps = _steps(r["global_step"], r["total_steps"], r["step_unit"])
    a, e = doc["anomalies"], doc["early_stops"]
    return [
        f"run       {r['run_id']} ({ident})",
        f"file      {doc['path']}" + _grew(doc),
        *_earlier(doc),
        f"started   {started}; duration {_unit(r['duration_seconds'], 1, 's')}",
        f"status    {status}",
        f"progress  {plural(r['updates'], 'update')}, {steps}, {plural(r['events'], 'event')}",
        f"speed     {_speed(r['steps_per_second'], r['step_unit'])} (last rollout)",
        f"returns   {plural(r['episodes'], 'episode')}; {FINAL_RETURN} "
        f"{format_value(r['episode_return_final'], 2, 'none')}, "
        f"{BEST_ROLLOUT_MEAN} {format_value(r['episode_return_best'], 2, 'none')}",
        f"verdict   {doc['verdict_text']}{_so_far(doc)} (as sanctum check --fail-on "
        f"{doc['fail_on']}); latest update {doc['latest_verdict']}",
        *(f"doubt     {line}" for line in doc["doubts"]),
        f"health    {plural(e['count'], 'early stop')}; "
        f"anomalies {a['critical']} critical, {a['warning']} warning",
    ]


def _grew(doc: dict[str, Any]) -> str:
    if not doc["grew_while_read"]:
        return ""
    return f" (it grew while read: summarised up to byte {doc['judged_bytes']})"


def _so_far(doc: dict[str, Any]) -> str:
    return " so far (live: no run_finished yet)" if doc["verdict_so_far"] else ""


def _earlier(doc: dict[str, Any]) -> list[str]:
    """The runs before this one in the same file, which the summary leaves out."""
    earlier = [x for x in doc["earlier_runs"] if x["new_run"]]
    if not earlier:
        return []
    runs = ", ".join(f"{x['run_id']} ({plural(x['updates'], 'update')})" for x in earlier)
    return [f"earlier   {plural(len(earlier), 'earlier run')} in this file not summarised: {runs}"]


def _steps(global_step: int | None, total_steps: int | None, unit: str | None) -> str:
    """``6144 / 10240 steps (60%)``, ``6144 tokens`` (the run's unit); a log with no step
    yet says so (never 0 %, never a crash)."""
    if global_step is None:
        return "no step yet" + ("" if total_steps is None else f" of {total_steps} planned")
    if total_steps is None:
        return steps_count(global_step, unit)
    done = progress_of(global_step, total_steps)
    share = "" if done is None else f" ({done:.0%})"
    return steps_count(f"{global_step} / {total_steps}", unit) + share


def _unit(value: float | None, decimals: int, unit: str) -> str:
    return NOT_MEASURED if value is None else f"{format_value(value, decimals)} {unit}"


def _speed(value: float | None, unit: str | None) -> str:
    """``4000 steps/s``, ``812 tokens/s``: the last rollout's rate in the run's unit."""
    return NOT_MEASURED if value is None else steps_rate(format_value(value, 0), unit)


RULE_COLUMNS: Final = (
    Column("rule", 28),
    *right("final", "worst", width=9),
    *right("warn", "crit", width=5),
    GAP,
    Column("1st crit", 0),
)
METRIC_COLUMNS: Final = (
    Column("metric", 22),
    *right("final", "min", "max", width=10),
    *right("updates", width=8),
    GAP,
    Column("non-finite", 0),
)


def _rules(doc: dict[str, Any]) -> list[str]:
    past_warning = (Level.WARNING.value, Level.CRITICAL.value)
    measured = {row["metric"] for row in doc["rules"] if row["updates_measured"]}  # as check
    shown = [row for row in doc["rules"] if can_have(row["metric"], measured)]
    rows = [
        (
            f"{row['label']} {row['metric']}",
            final_cell(row) + ("!" if row["final_level"] in past_warning else ""),
            row["worst_text"],
            str(row["updates_warning"]),
            str(row["updates_critical"]),
            "",
            SHORT_ABSENT if row["first_critical"] is None else str(row["first_critical"]),
        )
        for row in shown
    ]
    title = (
        "rules (final: last value, ! if its rule stood past warning; worst: of what the rule "
        "judged)"
    )
    notes = [line for row in shown if (line := not_judged_line(row)) is not None]
    columns = _widened(RULE_COLUMNS, [row[0] for row in rows])
    return [title, *table_lines(columns, rows), *notes]


def _metrics(doc: dict[str, Any]) -> list[str]:
    """Every metric a run of this kind can have (:func:`~sanctum.metrics.can_have`: a
    CartPole run lists no completion lengths as not measured); ``--json`` lists all."""
    measured = _measured(doc)
    rows = [
        _metric_cells(metric, s)
        for metric, s in doc["metrics"].items()
        if can_have(metric, measured)
    ]
    title = "metrics (final: last measured; min and max: of the finite values; - = none)"
    return [title, *table_lines(_widened(METRIC_COLUMNS, [row[0] for row in rows]), rows)]


def _measured(doc: dict[str, Any]) -> set[str]:
    return {metric for metric, s in doc["metrics"].items() if s["measured"]}


def _widened(columns: tuple[Column, ...], names: list[str]) -> tuple[Column, ...]:
    """``columns`` with the first as wide as its longest name: every row stays aligned."""
    first = columns[0]
    width = max([first.width, *(len(name) + 1 for name in names)])
    return (replace(first, width=width), *columns[1:])


def _metric_cells(metric: str, s: dict[str, Any]) -> tuple[str, ...]:
    if not s["measured"]:
        return (metric, NOT_MEASURED)
    bad = SHORT_ABSENT
    if s["nonfinite"]:
        bad = f"{s['nonfinite']}, first at update {s['first_nonfinite']}"
    return (
        metric,
        format_metric(metric, s["final"]),
        format_metric(metric, s["minimum"], absent=SHORT_ABSENT),
        format_metric(metric, s["maximum"], absent=SHORT_ABSENT),
        str(s["measured"]),
        "",
        bad,
    )


def _lists(doc: dict[str, Any]) -> list[str]:
    e, a = doc["early_stops"], doc["anomalies"]
    sections = [
        (
            f"early stops ({e['count']})",
            e["count"],
            [f"update {x['update']}: {x['reason']}" for x in e["listed"]],
        ),
        (
            f"anomalies ({a['critical'] + a['warning']})",
            a["critical"] + a["warning"],
            [
                ("" if x["update"] is None else f"update {x['update']} ") + f"{x['severity']} "
                f"{format_anomaly(x['metric'], x['value'], x['message'])}"
                for x in a["listed"]
            ],
        ),
        (
            f"skipped lines ({doc['skipped_malformed']} malformed, "
            f"{doc['skipped_unknown_kind']} unknown kind)",
            doc["skipped_lines"],
            [f"line {x['line']} {x['kind']}: {x['detail']}" for x in doc["skipped"]],
        ),
    ]
    lines: list[str] = []
    for title, count, items in sections:
        lines += ["", title] if count else []
        lines += [f"  {item}" for item in items[:TEXT_LIST_LIMIT]]
        if count > TEXT_LIST_LIMIT:
            lines.append(
                f"  ... and {count - TEXT_LIST_LIMIT} more (--json lists up to {len(items)})"
            )
    if doc["resets"] or doc["seq_gaps"]:
        lines += [
            "",
            f"log restarted {plural(doc['resets'], 'time')}; "
            f"{plural(doc['seq_gaps'], 'gap')} in seq (events lost)",
        ]
    return lines
