"""``sanctum check``: training health as a CI exit code (docs/design.md, section 6).

Exit 0 when healthy; 1 when any update reached ``fail_on`` under a rule, a metric went
non-finite, a critical anomaly was recorded (any anomaly with ``fail_on=warning``), the
gate cannot vouch for what it judged (a line that may be an update unreadable, bytes
after the file's last newline, events lost from ``seq`` that no skipped line accounts for,
``seq`` not increasing, updates missing from the head of a run that records no resume,
``run_finished.updates`` the log contradicts, events of another run id in the log, a
second ``run_started`` of the run, an import that could not read all of its source), or
the run did not end with one ``run_finished`` status ``completed`` and nothing after it
(or ever reported ``failed``), or it finished without a single update. Exit 2 when the
only failing row is that no rule measured anything in the run (its updates carry no judged
metric): the gate could not judge it.
``allow_unfinished`` accepts a log without ``run_finished`` (still running, or cut off)
and an ``interrupted`` run; a ``failed`` run always fails, because the trainer itself
reported an error. Exit 2 (raised as EventLogError / ThresholdsError) is for input that
cannot be judged at all. The rows and the verdict they make (``FAIL: KL 22x``, the word
every view shows for the run) are built in :mod:`sanctum.model.checks` and
:mod:`sanctum.model.verdict`, from the aggregator every view reads.

A check judges one run. A file that holds several (a ``run_started`` of another run id
after the first run: two trainers, or two jobs, writing one path) is refused with exit 2
naming the line where the second run starts, rather than judged by its last run: a CI
gate must neither pass over a failed run in the file nor fail on a run its header does not
name. A file truncated or replaced while it was read is judged on what it holds now, with
a note: it holds one run again. A file a writer keeps appending to is judged up to its
size when the check began (the line that straddles it read whole): the check ends, and
says which byte it stopped at (``judged_bytes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sanctum.formatting import plural
from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.model.checks import exit_code_of, judge_rows, lost_counts
from sanctum.model.snapshot import SkipCounts
from sanctum.model.verdict import CheckRow, RunVerdict, verdict_of
from sanctum.reports.documents import (
    RuleTallyReport,
    RunFactsReport,
    rule_tallies,
    run_facts,
    skip_counts,
)
from sanctum.reports.scan import LogScan, run_starts, scan_log
from telemetry.eventlog import EventLogError
from telemetry.text import visible


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The whole verdict of ``sanctum check``."""

    rows: tuple[CheckRow, ...]
    """Every check: each rule, then the run's other checks (and the learning gate's)."""
    tallies: tuple[RuleTallyReport, ...]
    """Each rule's tally, as ``summary`` and ``diff`` show it."""
    path: Path
    run: RunFactsReport
    """Who the run is and how far it got, as ``summary`` and ``diff`` show it."""
    skipped: SkipCounts
    """The lines skipped, the first listed with their reasons."""
    fail_on: Level
    allow_unfinished: bool = False
    allow_skipped: bool = False
    """What the check was told to accept: a run not finished, lines it could not read."""
    notes: tuple[str, ...] = ()
    """What the reader had to do that the verdict depends on (the file started over)."""
    judged_bytes: int = 0
    """The byte the check stopped at: it judged every line before it, none after."""
    file_bytes: int = 0
    """The file's size when the check began: a file that grows is judged up to there."""
    foreign_runs: tuple[tuple[str, int], ...] = ()
    """Other run ids with events in the log, and how many (the first few)."""
    lost_events: int = 0
    """Events missing from ``seq`` that no skipped line accounts for."""
    missing_updates: int = 0
    """Updates ``run_finished.updates`` says ran that the log does not hold."""

    @property
    def run_id(self) -> str | None:
        return self.run.run_id

    @property
    def updates(self) -> int:
        return self.run.updates

    @property
    def status(self) -> str | None:
        return self.run.status

    @property
    def skipped_lines(self) -> int:
        """Lines skipped in all (malformed or of an unknown kind)."""
        return self.skipped.malformed + self.skipped.unknown_kind

    @property
    def passed(self) -> bool:
        return all(row.passed for row in self.rows)

    @property
    def exit_code(self) -> int:
        """0 passed, 1 failed, 2 when all that failed is that no rule could judge the run."""
        return exit_code_of(self.rows)

    @property
    def verdict(self) -> RunVerdict:
        """The run's verdict from these rows: the word every view shows for the run."""
        return verdict_of(self.rows)


REQUIRED: Final = "required"
"""The row ``check --require`` adds: the named rules each measured some update."""


def rule_choices(rows: Sequence[CheckRow]) -> dict[str, str]:
    """Every name ``--require`` takes for the run's rules -> the rule's label: each rule's
    label and metric as written, then lower-case. A name as written wins, then a metric over
    a label (``Entropy`` is the rule so labelled, on entropy_normalized; ``entropy`` the
    shift rule's metric)."""
    rules = [row for row in rows if row.rule is not None]
    found = {r.label.lower(): r.label for r in rules}
    found |= {r.name.lower(): r.label for r in rules}
    found |= {r.label: r.label for r in rules}
    return found | {r.name: r.label for r in rules}


def required_row(rows: Sequence[CheckRow], required: Sequence[str]) -> CheckRow:
    """Whether every rule ``required`` names measured some update of the run (``all``:
    every rule the run's kind expects). A name that is no rule of this run fails it too:
    the run cannot be judged on what it was required to be judged on."""
    choices = rule_choices(rows)
    by_label = {row.label: row for row in rows if row.rule is not None}
    wanted: list[str] = []
    unknown: list[str] = []
    for name in (n.strip() for n in required):
        if name.lower() == "all":
            wanted += [row.label for row in rows if row.covers]
        elif name in choices or name.lower() in choices:
            wanted.append(choices.get(name) or choices[name.lower()])
        else:
            unknown.append(name)
    wanted = list(dict.fromkeys(wanted))
    missing = [label for label in wanted if not by_label[label].updates_measured]
    if not missing and not unknown:
        return CheckRow(
            REQUIRED, REQUIRED, True, f"required rules each measured the run: {', '.join(wanted)}"
        )
    said = []
    if missing:
        said.append(
            f"{', '.join(missing)} measured nothing in this run (the log holds no "
            f"{', '.join(by_label[label].name for label in missing)})"
        )
    if unknown:
        said.append(
            f"{', '.join(visible(u) for u in unknown)}: no such rule in this run (its rules: "
            f"{', '.join(by_label)})"
        )
    return CheckRow(
        REQUIRED,
        REQUIRED,
        False,
        "; ".join(said),
        verdict_name=f"not measured: {', '.join([*missing, *unknown])}",
    )


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
    starts = run_starts(scan.path, scan.judged_bytes or None)  # what the scan judged
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
    agg = scan.aggregator
    rows = judge_rows(agg, fail_on, allow_unfinished, allow_skipped)
    notes = [f"{r.why}; judged what the file holds now" for r in scan.earlier_runs if not r.new_run]
    if scan.torn_tail is not None:
        line, size = scan.torn_tail
        notes.append(
            f"line {line} ({plural(size, 'byte')}) has no newline: torn by a crash, or still "
            "being written; not judged"
        )
    if scan.size_after > scan.file_bytes:
        notes.append(
            f"the file grew while it was read: judged up to byte {scan.judged_bytes} (it held "
            f"{plural(scan.file_bytes, 'byte')} when check began; "
            f"{plural(scan.size_after - scan.judged_bytes, 'byte')} written since were not "
            "judged)"
        )
    lost, short = lost_counts(agg)
    return CheckResult(
        path=scan.path,
        run=run_facts(scan),
        fail_on=fail_on,
        allow_unfinished=allow_unfinished,
        allow_skipped=allow_skipped,
        rows=rows,
        tallies=rule_tallies(scan),
        skipped=skip_counts(scan),
        notes=tuple(notes),
        judged_bytes=scan.judged_bytes,
        file_bytes=scan.file_bytes,
        foreign_runs=agg.run.foreign_runs,
        lost_events=lost,
        missing_updates=short,
    )
