"""What ``sanctum check`` prints and writes: the text table, one JSON object, JUnit XML.

Every string that came from the log (run ids, reasons, messages, paths) is made visible
before it is printed or written (:func:`telemetry.text.visible`): a log cannot send
commands to the terminal, and the XML stays valid whatever the log holds.
"""

from __future__ import annotations

import errno
import io
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Final

from sanctum.formatting import SHORT_ABSENT, plural, visible, visible_lines
from sanctum.health.levels import Level
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.metrics import can_have
from sanctum.model.verdict import CheckRow
from sanctum.reports.check import CheckResult, run_check
from sanctum.reports.documents import skipped_fields
from sanctum.reports.learning import LearningVerdict
from sanctum.reports.learning_report import learning_dict, learning_lines
from sanctum.reports.table import GAP, right, table_lines
from sanctum.text.run_table import Column
from telemetry.codec import spell_nonfinite

FAILING_ON = {
    Level.CRITICAL: "critical (a rule at critical, a critical anomaly)",
    Level.WARNING: "warning (a rule at warning or critical, any anomaly, warning ones too)",
}
"""What ``--fail-on`` fails on, as the check output states it. Non-finite values and an
unfinished or failed run fail at either level."""


def format_text(result: CheckResult, learning: LearningVerdict | None = None) -> str:
    """The table for a terminal or a CI log; with ``learning``, the gate's seeds table too
    (its judgements are rows of ``result``)."""
    lines = [
        f"sanctum check {result.path}",
        f"run {result.run_id}, {plural(result.updates, 'update')}, "
        f"failing on {FAILING_ON[result.fail_on]}"
        + (", unfinished allowed" if result.allow_unfinished else ""),
        "",
        "per rule: worst judged value; updates measured, at warning, at critical (- = none)",
    ]
    measured = {row.name for row in result.rows if row.rule is not None and row.updates_measured}
    shown = [row for row in result.rows if row.rule is None or can_have(row.name, measured)]
    ruled = [row for row in shown if row.rule is not None]
    width = max([20, *(len(f"{row.label} {row.name}") for row in ruled)])
    columns = (Column("check", width), *RULE_COLUMNS)
    lines += table_lines(columns, [_rule_cells(row) for row in ruled])
    lines.append("")
    if learning is not None:
        lines += learning_lines(learning)
    for row in shown:  # a rule this kind of run cannot feed is in --json, not here
        lines.append(f"{'pass' if row.passed else 'FAIL'}  {row.label}: {row.message}")
    lines += [f"note  {note}" for note in result.notes]
    if result.skipped_lines:
        lines.append(
            f"note  {plural(result.skipped_lines, 'line')} skipped "
            "(malformed or unknown kind); see sanctum summary"
        )
    lines.append("")
    lines.append(outcome_line(result))
    return visible_lines(lines)


def check_verdict(path: Path, thresholds: Path | None = None) -> str:
    """``sanctum check``'s last line for the log at ``path`` under the shipped rules or the
    thresholds file (at ``--fail-on critical``): what a trainer prints as it ends. Raises
    :class:`telemetry.eventlog.reader.EventLogError` for a log it cannot judge and
    :class:`sanctum.health.rule.ThresholdsError` for a bad thresholds file."""
    return outcome_line(run_check(path, load_thresholds(thresholds)))


def outcome_line(result: CheckResult) -> str:
    """The last line: the run's verdict as every view words it (``OK``, ``WARN: KL 3x``,
    ``FAIL: KL 8x, Entropy 379x``; the learning gate's rows are among those it is made of:
    ``FAIL: final return``), so the gate and the views speak one vocabulary."""
    return result.verdict.text


RULE_COLUMNS: Final = (
    *right("worst", width=10),
    *right("upd", "warn", "crit", width=5),
    *right("1st crit", width=8),
    GAP,
    Column("result", 0),
)
"""The rule table's columns after the first (``check``: as wide as the longest name)."""


def _rule_cells(row: CheckRow) -> tuple[str, ...]:
    first = SHORT_ABSENT if row.first_critical is None else str(row.first_critical)
    return (
        f"{row.label} {row.name}",
        row.worst_text or SHORT_ABSENT,
        str(row.updates_measured),
        str(row.updates_warning),
        str(row.updates_critical),
        first,
        "",
        "pass" if row.passed else "FAIL",
    )


def to_dict(result: CheckResult, learning: LearningVerdict | None = None) -> dict[str, Any]:
    """The result as one JSON-ready object (non-finite numbers spelled as strings); with
    ``learning``, the gate's figures under ``learning``."""
    doc: dict[str, Any] = {
        "path": str(result.path),
        "run": result.run.to_json(),
        "run_id": result.run_id,
        "passed": result.passed,
        "exit_code": result.exit_code,
        "fail_on": result.fail_on.value,
        "allow_unfinished": result.allow_unfinished,
        "allow_skipped": result.allow_skipped,
        "updates": result.updates,
        "status": result.status,
        **result.verdict.fields(),
        **skipped_fields(result.skipped),
        "notes": list(result.notes),
        "judged_bytes": result.judged_bytes,
        "file_bytes": result.file_bytes,
        "lost_events": result.lost_events,
        "missing_updates": result.missing_updates,
        "foreign_runs": dict(result.foreign_runs),
        "rows": [
            {
                "name": r.name,
                "label": r.label,
                "passed": r.passed,
                "message": r.message,
                "rule": r.rule,
                "worst": spell_nonfinite(r.worst),
                "worst_update": r.worst_update,
                "updates_measured": r.updates_measured,
                "updates_warning": r.updates_warning,
                "updates_critical": r.updates_critical,
                "first_warning": r.first_warning,
                "first_critical": r.first_critical,
            }
            for r in result.rows
        ],
        "rules": [tally.to_json() for tally in result.tallies],
    }
    if learning is not None:
        doc["learning"] = learning_dict(learning)
    return doc


def write_junit(result: CheckResult, path: Path) -> None:
    """JUnit XML: one test case per row (each rule, non-finite, anomalies, finish)."""
    failures = sum(not r.passed for r in result.rows)
    suite = _suite(
        len(result.rows), failures, 0, str(result.path), result.run_id, result.fail_on.value
    )
    classname = f"sanctum.reports.check.{visible(result.run_id or 'run')}"
    for row in result.rows:
        name = visible(row.name)
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": name})
        if row.passed:
            ET.SubElement(case, "system-out").text = visible(row.message)
        else:
            message, label = visible(row.message), visible(row.label)
            failure = ET.SubElement(case, "failure", {"message": message, "type": label})
            failure.text = message if row.rule is None else f"{visible(row.rule)}\n{message}"
    _write(suite, path)


def write_junit_error(message: str, run: Path, fail_on: Level, path: Path) -> None:
    """JUnit XML for input that could not be judged: one test case ``input`` in error, so a
    CI report shows why instead of a missing file."""
    suite = _suite(1, 0, 1, str(run), None, fail_on.value)
    case = ET.SubElement(suite, "testcase", {"classname": "sanctum.reports.check", "name": "input"})
    message = visible(message)
    ET.SubElement(case, "error", {"message": message, "type": "unusable input"}).text = message
    _write(suite, path)


def _suite(
    tests: int, failures: int, errors: int, run: str, run_id: str | None, fail_on: str
) -> ET.Element:
    suite = ET.Element(
        "testsuite",
        {
            "name": "sanctum check",
            "tests": str(tests),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": "0",
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (("path", run), ("run_id", run_id or ""), ("fail_on", fail_on)):
        ET.SubElement(props, "property", {"name": name, "value": visible(value)})
    return suite


def _write(suite: ET.Element, path: Path) -> None:
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    document = io.BytesIO()
    tree.write(document, encoding="utf-8", xml_declaration=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_NONBLOCK: a FIFO no one reads is refused at once (ENXIO), never waited on
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            exc.strerror = "it is a pipe no one reads"
        raise
    with open(fd, "wb") as fh:
        os.set_blocking(fd, True)
        fh.write(document.getvalue())
