"""One pass over a whole event log, for ``sanctum check`` and ``sanctum summary``.

A scan feeds each reader batch to the same :class:`SanctumAggregator` the dashboard uses
and reads its results: the rule tallies and per-metric statistics of its
:class:`~sanctum.health.judge.HealthJudge`, its records of early stops and anomalies, and the
runs it forgot when the log started over. There is one fold and one reset rule, and the
reader's batches carry what follows the file's last newline (a line torn off), so every
view judges it alike.

A scan describes one run: the last in the file. ``check`` refuses a file that holds
several, ``summary`` says which runs it left out.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sanctum.formatting import plural
from sanctum.health.judge import MetricStats
from sanctum.health.rule_judge import RuleTally
from sanctum.health.thresholds import Thresholds
from sanctum.metrics import FINAL_EPISODES
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.ledger import AnomalyRecord, EarlierRun
from sanctum.reports.return_curve import ReturnPoint, curve_of, final_return
from telemetry.codec import line_decoder
from telemetry.eventlog import (
    MAX_LINE_BYTES,
    EventLogError,
    ReadBatch,
    SkippedLine,
    open_reader,
)
from telemetry.eventlog.reader import DECODE_ERRORS
from telemetry.events import Rollout, RunStarted
from telemetry.files import InputFileError, bounded_lines, open_input


def not_a_run(path: Path, found: str) -> str:
    """The one line every command refuses a file with that is not a run's event log
    (``check``, ``summary``, ``serve``, ``--once``): what was ``found``, then the verdict."""
    return f"{path}: {found}; not the event log of a run"


def no_run_started(
    path: Path, lines: int, skipped: Sequence[SkippedLine] = (), probed: bool = False
) -> str:
    """:func:`not_a_run` for a file whose ``lines`` hold no ``run_started`` event (``probed``:
    only its first lines were read), naming the first line it ``skipped`` and why. No count
    of the events or skipped lines it held: a stray event in prose is no fact about a run."""
    where = "its first " if probed else ""
    found = f"no run_started event in {where}{plural(lines, 'line')}"
    return not_a_run(path, found) + "".join(f"; line {s.line_no}: {s.detail}" for s in skipped[:1])


class NoRunStarted(EventLogError):
    """The file holds no ``run_started`` event: not the log of a run."""


@dataclass
class LogScan:
    """Everything ``check`` and ``summary`` report, folded from a whole log."""

    path: Path
    thresholds: Thresholds
    aggregator: SanctumAggregator = field(init=False)
    torn_tail: tuple[int, int] | None = None
    """(line number, bytes) of a last line without its newline: torn by a crash, or still
    being written."""
    judged_bytes: int = 0
    """The byte the scan stopped at: every line before it was read, none after."""
    file_bytes: int = 0
    """The file's size when the scan began (or started over, the file being replaced):
    a scan reads that much and no further, however fast a writer appends."""
    size_after: int = 0
    """The file's size when the scan ended (more than ``file_bytes``: it grew meanwhile)."""
    last_returns: deque[ReturnPoint] = field(
        init=False, default_factory=lambda: deque(maxlen=FINAL_EPISODES)
    )
    """The run's latest rollouts that finished an episode: as many as the final return's
    episodes, so they hold its window whatever it is (each holds one episode or more)."""
    _returns_of: object = field(init=False, default=None)
    """The aggregator's run state ``last_returns`` belong to (a new one: a new run)."""

    def __post_init__(self) -> None:
        self.aggregator = SanctumAggregator(self.thresholds)

    def feed(self, batch: ReadBatch) -> None:
        """Fold one reader batch."""
        self.aggregator.handle_batch(batch)
        run = self.aggregator.run
        if self._returns_of is not run:  # the log started over, or a new run began
            self._returns_of = run
            self.last_returns.clear()
        kept = self.last_returns.maxlen  # only the batch's last points can stay
        latest: list[ReturnPoint] = []
        for event in reversed(batch.events):
            if isinstance(event, Rollout) and event.run_id == run.run_id:
                latest += curve_of((event,))
                if len(latest) == kept:
                    break
        self.last_returns.extend(reversed(latest))

    @property
    def final_return(self) -> float | None:
        """The run's final return, as ``ppo train`` prints it at the end
        (:func:`telemetry.returns.final_return`); None: no episode finished."""
        return final_return(self.last_returns)

    @property
    def unreadable(self) -> list[SkippedLine]:
        """The first skipped lines that may have been a ``ppo_update``: updates that could
        not be judged (the aggregator keeps them: the live views judge them too)."""
        return self.aggregator.integrity.unreadable

    @property
    def unreadable_total(self) -> int:
        return self.aggregator.integrity.unreadable_total

    @property
    def skipped(self) -> list[SkippedLine]:
        """The first lines the reader skipped (all are counted by the aggregator)."""
        return self.aggregator.integrity.skipped_lines

    @property
    def run_started(self) -> bool:
        """The run being described began with a ``run_started``."""
        return self.aggregator.run.run_id is not None

    @property
    def run_id(self) -> str | None:
        return self.aggregator.run.run_id

    @property
    def tallies(self) -> dict[str, RuleTally]:
        """How each rule judged the run, in rule order."""
        return {m: judge.tally for m, judge in self.aggregator.judge.rules.items()}

    @property
    def stats(self) -> dict[str, MetricStats]:
        return self.aggregator.judge.stats

    @property
    def nonfinite_updates(self) -> int:
        return self.aggregator.judge.nonfinite_updates

    @property
    def first_nonfinite_update(self) -> int | None:
        return self.aggregator.judge.first_nonfinite_update

    @property
    def early_stops(self) -> list[tuple[int, str]]:
        return self.aggregator.records.early_stops

    @property
    def anomalies(self) -> list[AnomalyRecord]:
        return self.aggregator.records.anomalies

    @property
    def best_return(self) -> float | None:
        return self.aggregator.records.best_return

    @property
    def updates_seen(self) -> int:
        """``ppo_update`` events of this run."""
        return self.aggregator.run.updates

    @property
    def early_stop_count(self) -> int:
        return self.aggregator.tamiyo.early_stops

    @property
    def earlier_runs(self) -> list[EarlierRun]:
        """Runs dropped because the log started over after them, oldest first."""
        return self.aggregator.integrity.earlier_runs


def run_starts(path: Path, limit: int | None = None) -> list[tuple[int, str]]:
    """(line number, run id) of each ``run_started`` that begins a new run in the file at
    ``path`` (a run id other than the one before it), decoded as the reader decodes; in
    its first ``limit`` bytes (None: all of it). Empty when the file cannot be read now.

    Events carry no line numbers, so this second pass runs only when a scan found more
    than one run, to name the lines; it decodes only lines that mention run_started, and,
    as the reader does, never holds a line longer than MAX_LINE_BYTES (it skips it) nor
    takes a last line without its newline.
    """
    decoder = line_decoder()  # the reader's own
    starts: list[tuple[int, str]] = []
    try:
        with open_input(path, "event log") as fh:
            for line_no, line in enumerate(bounded_lines(fh, MAX_LINE_BYTES), 1):
                if line is not None and b"run_started" in line and line.endswith(b"\n"):
                    try:
                        event = decoder.decode(line)
                    except DECODE_ERRORS:
                        event = None  # the reader skipped it too
                    if isinstance(event, RunStarted) and (
                        not starts or starts[-1][1] != event.run_id
                    ):
                        starts.append((line_no, event.run_id))
                if limit is not None and fh.tell() >= limit:  # the line that straddles it, read
                    break
    except (OSError, InputFileError):
        return []
    return starts


def scan_log(path: Path, thresholds: Thresholds) -> LogScan:
    """Read the log at ``path`` once, as far as it was when the scan began: a file a
    writer keeps appending to is judged on that snapshot (the line that straddles its end
    read whole), so the scan ends. Raises EventLogError for unusable input."""
    scan = LogScan(path, thresholds)
    reader = open_reader(path)
    for batch in reader.batches(snapshot=True):
        scan.feed(batch)
    scan.file_bytes = reader.snapshot_limit or 0
    scan.judged_bytes = reader.offset
    try:
        scan.size_after = max(reader.size, os.stat(path).st_size)
    except OSError:  # gone since: it held what was read
        scan.size_after = reader.size
    scan.torn_tail = scan.aggregator.integrity.tail  # as the reader found it at the end of the file
    if not scan.run_started:
        raise NoRunStarted(no_run_started(path, reader.line_no, reader.skipped))
    return scan
