"""``sanctum check``: training health as a CI exit code (docs/design.md, section 6).

Exit 0 when healthy; 1 when any update reached ``fail_on`` under a rule, a metric went
non-finite, a critical anomaly was recorded (any anomaly with ``fail_on=warning``), or the
run did not end with ``run_finished`` status ``completed``. ``allow_unfinished`` accepts a
log without ``run_finished`` (still running, or cut off) and an ``interrupted`` run; a
``failed`` run always fails, because the trainer itself reported an error. Exit 2 (raised
as EventLogError / ThresholdsError) is for input that cannot be judged at all.

A check judges one run. A file that holds several (a ``run_started`` of another run id
after the first run: two trainers, or two jobs, writing one path) is refused with exit 2
naming the line where the second run starts, rather than judged by its last run: a CI
gate must neither pass over a failed run in the file nor fail on a run its header does not
name. A file truncated or replaced while it was read is judged on what it holds now, with
a note: it holds one run again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sanctum.exits import EXIT_FAILED, EXIT_OK
from sanctum.formatting import format_anomaly, format_duration, plural
from sanctum.health import Level
from sanctum.rule_judge import RuleTally
from sanctum.scan import LogScan, run_starts, scan_log
from sanctum.thresholds import Thresholds
from telemetry.eventlog import EventLogError, SkippedLine


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One line of the verdict: a rule, non-finite values, anomalies or the finish."""

    name: str
    """``approx_kl`` ... for rules, then ``nonfinite``, ``bug``, ``stall``, ``anomalies``,
    ``run_finished``."""
    label: str
    passed: bool
    message: str
    """Why it failed, or what it saw when it passed."""
    rule: str | None = None
    """The thresholds in words, for rule rows."""
    worst: float | None = None
    worst_update: int | None = None
    updates_measured: int = 0
    updates_warning: int = 0
    updates_critical: int = 0
    first_warning: int | None = None
    first_critical: int | None = None
    worst_text: str | None = None
    """``worst`` as the rule spells its statistic (``0.0412``, ``x12.3``)."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The whole verdict of ``sanctum check``."""

    path: Path
    run_id: str | None
    fail_on: Level
    allow_unfinished: bool
    allow_skipped: bool
    updates: int
    status: str | None
    rows: tuple[CheckRow, ...]
    skipped_lines: int
    skipped: tuple[SkippedLine, ...] = ()
    """The first skipped lines, with their reasons."""
    notes: tuple[str, ...] = ()
    """What the reader had to do that the verdict depends on (the file started over)."""

    @property
    def passed(self) -> bool:
        return all(row.passed for row in self.rows)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed else EXIT_FAILED


def run_check(
    path: Path,
    thresholds: Thresholds,
    fail_on: Level = Level.CRITICAL,
    allow_unfinished: bool = False,
    allow_skipped: bool = False,
) -> CheckResult:
    """Scan the log at ``path`` and judge it. Raises EventLogError for unusable input,
    :class:`SeveralRuns` for a log that holds more than one run."""
    scan = scan_log(path, thresholds)
    refuse_several_runs(scan)
    return judge(scan, fail_on, allow_unfinished, allow_skipped)


class SeveralRuns(EventLogError):
    """The log holds more than one run; ``check`` judges exactly one (exit 2)."""


def refuse_several_runs(scan: LogScan) -> None:
    """Raise :class:`SeveralRuns` when the file, as it is now, holds more than one run."""
    since_reset = scan.earlier_runs
    for i, earlier in enumerate(scan.earlier_runs):
        if not earlier.new_run:  # the file was replaced: runs before that are not in it
            since_reset = scan.earlier_runs[i + 1 :]
    if not any(r.new_run for r in since_reset):
        return
    starts = run_starts(scan.path)
    where, first, second = str(scan.path), since_reset[0].run_id, scan.run_id
    if len(starts) > 1:  # else the file changed again since the scan: name no line
        where, first, second = f"{scan.path}:{starts[1][0]}", starts[0][1], starts[1][1]
    ids = ", ".join(run_id for _, run_id in starts)
    raise SeveralRuns(
        f"{where}: a second run, {second}, starts here after run {first} "
        f"(the log holds {plural(len(starts), 'run')}: {ids}); sanctum check judges one run: "
        "give it that run's own events file (sanctum summary describes the last run)"
    )


def judge(
    scan: LogScan, fail_on: Level, allow_unfinished: bool, allow_skipped: bool = False
) -> CheckResult:
    """The verdict on a scanned log (pure)."""
    if fail_on not in (Level.WARNING, Level.CRITICAL):
        raise ValueError(f"fail_on must be warning or critical, got {fail_on.value}")
    run = scan.aggregator.run
    rows = [_rule_row(t, fail_on) for t in scan.tallies.values()]
    rows += [
        _nonfinite_row(scan),
        _bug_row(scan),
        _stall_row(scan),
        _anomaly_row(scan, fail_on),
        _unreadable_row(scan, allow_skipped),
        _finish_row(run.status, run.reason, allow_unfinished),
    ]
    notes = [f"{r.why}; judged what the file holds now" for r in scan.earlier_runs if not r.new_run]
    if scan.torn_tail is not None:
        line, size = scan.torn_tail
        notes.append(
            f"line {line} ({plural(size, 'byte')}) has no newline: torn by a crash, or still "
            "being written; not judged"
        )
    return CheckResult(
        path=scan.path,
        run_id=run.run_id,
        fail_on=fail_on,
        allow_unfinished=allow_unfinished,
        allow_skipped=allow_skipped,
        updates=run.updates,
        status=run.status,
        rows=tuple(rows),
        skipped_lines=scan.aggregator.malformed + scan.aggregator.unknown_kind,
        skipped=tuple(scan.skipped),
        notes=tuple(notes),
    )


def _rule_row(t: RuleTally, fail_on: Level) -> CheckRow:
    rule = t.rule
    failing = t.reached(fail_on)
    if t.measured == 0:
        message = "not measured in this run"
    elif t.judged == 0:
        message = f"not judged: all {plural(t.measured, 'update')} within the warm-up"
    elif failing:
        first = _first_reaching(t, fail_on)
        message = (
            f"{rule.label} reached {fail_on.value} in {plural(failing, 'update')}, "
            f"first at update {first}; worst {rule.format(t.worst)} at update {t.worst_update}"
        )
    else:
        message = f"worst {rule.format(t.worst)} over {plural(t.judged, 'update')}"
    return CheckRow(
        name=rule.metric,
        label=rule.label,
        passed=failing == 0,
        message=message,
        rule=rule.describe(),
        worst=t.worst,
        worst_update=t.worst_update,
        updates_measured=t.measured,
        updates_warning=t.at_warning,
        updates_critical=t.at_critical,
        first_warning=t.first_warning,
        first_critical=t.first_critical,
        worst_text=rule.format(t.worst, "-"),
    )


def _first_reaching(t: RuleTally, level: Level) -> int | None:
    """The first update at ``level`` or worse."""
    firsts = [t.first_critical] + ([t.first_warning] if level is Level.WARNING else [])
    return min((u for u in firsts if u is not None), default=None)


def _nonfinite_row(scan: LogScan) -> CheckRow:
    bad = {m: s for m, s in scan.stats.items() if s.nonfinite}
    if not bad:
        return CheckRow("nonfinite", "non-finite", True, "every measured value is finite")
    metrics = ", ".join(
        f"{m} ({s.nonfinite}x, first at update {s.first_nonfinite})" for m, s in bad.items()
    )
    return CheckRow(
        "nonfinite",
        "non-finite",
        False,
        f"NaN or Inf in {plural(scan.nonfinite_updates, 'update')}: {metrics}",
        updates_critical=scan.nonfinite_updates,
        first_critical=scan.first_nonfinite_update,
    )


def _bug_row(scan: LogScan) -> CheckRow:
    judge = scan.aggregator.judge
    first = judge.first_violation
    if first is None:
        return CheckRow("bug", "bug", True, "every value within its possible range")
    return CheckRow(
        "bug",
        "bug",
        False,
        f"{plural(judge.violations, 'impossible value')} (a logging bug, not data); "
        f"first at update {first.update}: {first.message}",
        updates_critical=judge.violations,
        first_critical=first.update,
    )


def _stall_row(scan: LogScan) -> CheckRow:
    run, limit = scan.aggregator.run, scan.thresholds.stall_seconds
    if not run.stalls:
        return CheckRow("stall", "stall", True, f"no silence longer than {limit:g} s")
    return CheckRow(
        "stall",
        "stall",
        False,
        f"{plural(run.stalls, 'silence')} longer than {limit:g} s while running; longest "
        f"{format_duration(run.longest_stall)}, first during update {run.first_stall_update}",
        updates_critical=run.stalls,
        first_critical=run.first_stall_update,
    )


def _anomaly_row(scan: LogScan, fail_on: Level) -> CheckRow:
    run = scan.aggregator.run
    counted = run.anomalies_critical + (run.anomalies_warning if fail_on is Level.WARNING else 0)
    first = next(
        (a for a in scan.anomalies if a.severity == "critical" or fail_on is Level.WARNING), None
    )
    summary = f"{run.anomalies_critical} critical, {run.anomalies_warning} warning"
    if run.anomalies_warning and fail_on is Level.WARNING:
        summary += " (warning anomalies fail the check under --fail-on warning)"
    message = (
        summary
        if first is None
        else (
            f"{summary}; first at update {first.update}: "
            f"{format_anomaly(first.metric, first.value, first.message)}"
        )
    )
    return CheckRow(
        "anomalies",
        "anomalies",
        counted == 0,
        message,
        updates_warning=run.anomalies_warning,
        updates_critical=run.anomalies_critical,
    )


def _unreadable_row(scan: LogScan, allow_skipped: bool) -> CheckRow:
    """A gate never passes what it could not read: an update line that did not decode."""
    total = scan.unreadable_total
    if not total:
        return CheckRow("skipped", "unreadable", True, "every update line was read")
    listed = scan.unreadable
    numbers = ", ".join(str(s.line_no) for s in listed[:20]) + (", ..." if total > 20 else "")
    where = f"line {numbers}" if total == 1 else f"lines {numbers}; the first"
    allowed = " (passed by --allow-skipped)" if allow_skipped else ""
    return CheckRow(
        "skipped",
        "unreadable",
        allow_skipped,
        f"{plural(total, 'line')} that may be a ppo_update could not be read, so "
        f"{'its update was' if total == 1 else 'their updates were'} not judged{allowed}: "
        f"{where}: {listed[0].detail}",
        updates_critical=total,
    )


def _finish_row(status: str | None, reason: str | None, allow_unfinished: bool) -> CheckRow:
    because = f": {reason}" if reason else ""
    if status == "completed":
        return CheckRow("run_finished", "finished", True, "run_finished: completed")
    if status == "failed":
        return CheckRow("run_finished", "finished", False, f"run failed{because}")
    if status == "interrupted":
        return CheckRow("run_finished", "finished", allow_unfinished, f"run interrupted{because}")
    return CheckRow(
        "run_finished",
        "finished",
        allow_unfinished,
        "no run_finished: the run is still going or was cut off",
    )
