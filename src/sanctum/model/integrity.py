"""The log's integrity ledger: what the reader could not use, across every run of the log.

Lines skipped (malformed, or of a kind this reader does not know), the first of them kept
to be named; the lines that may have been an update (the gate cannot pass what it did not
judge); what follows the file's last newline; and the runs forgotten when the log started
over. A reset forgets the run, not this: the skipped lines of a file are the file's. What
the log says of the run's own order and count (``seq`` gaps, events of another run) is in
the run's facts (:class:`~sanctum.model.snapshot.RunFacts`).
"""

from __future__ import annotations

from sanctum.model.ledger import EarlierRun
from sanctum.model.snapshot import SkipCounts
from telemetry.eventlog import SKIPPED_KEPT, ReadBatch, SkipClass, SkippedLine


def fails_the_gate(skip: SkipClass) -> bool:
    """A skipped line (of this class) that the gate cannot pass: a malformed line of any
    kind, or one that says nothing of what it is. An update holds the rules' figures, a
    rollout its returns (judged finite), an anomaly its severity, a heartbeat the time a
    stall is judged by, a run_finished the outcome: none read is none judged. A line of a
    kind this reader does not know (a newer minor schema's) is not among them."""
    return skip[0] == "malformed"


class LogIntegrity:
    """What the reader skipped and found torn in one log, and the runs it forgot."""

    def __init__(self) -> None:
        self.malformed = 0
        self.unknown_kind = 0
        self.resets = 0
        self.last_reset: str | None = None
        self.skipped_lines: list[SkippedLine] = []
        """The first SKIPPED_KEPT lines the reader skipped (all are counted)."""
        self.unreadable: list[SkippedLine] = []
        """The first SKIPPED_KEPT skipped lines that may have been a ``ppo_update`` (one
        that says so, or one that could not even say its type): updates not judged."""
        self.unreadable_total = 0
        self.earlier_runs: list[EarlierRun] = []
        """Runs forgotten because the log started over after them, oldest first."""
        self.tail: tuple[int, int] | None = None
        """(line number, bytes) of what follows the file's last newline, as the reader last
        found it at the end of the file: a line still being written, or torn (None: none).
        Once nothing can still be writing it, a line that may be an update not judged."""

    def forget(self, earlier: EarlierRun) -> None:
        """The log started over after ``earlier`` (its file replaced, or a new run in it)."""
        self.earlier_runs.append(earlier)
        self.resets += 1
        self.last_reset = earlier.why

    def end_of_file(self, batch: ReadBatch) -> None:
        """What follows the file's last newline as ``batch`` found it (a batch that starts
        the file over forgets what an earlier one found)."""
        if batch.reset is not None:
            self.tail = None
        if batch.tail is not None:
            self.tail = batch.tail if batch.tail[1] else None

    def skipped(self, batch: ReadBatch) -> int:
        """Count and keep the lines ``batch`` skipped; returns how many it skipped."""
        total = 0
        for line in batch.skipped:
            total += self._count(line.skip_class, 1)
            if len(self.skipped_lines) < SKIPPED_KEPT:
                self.skipped_lines.append(line)
            if fails_the_gate(line.skip_class) and len(self.unreadable) < SKIPPED_KEPT:
                self.unreadable.append(line)
        for skip, count in batch.unlisted.items():  # past the reader's cap: counted only
            total += self._count(skip, count)
        return total

    def _count(self, skip: SkipClass, count: int) -> int:
        if skip[0] == "malformed":
            self.malformed += count
        else:
            self.unknown_kind += count
        if fails_the_gate(skip):
            self.unreadable_total += count
        return count

    def counts(self) -> SkipCounts:
        """The frozen counts a snapshot carries."""
        lines = tuple(self.skipped_lines)
        return SkipCounts(self.malformed, self.unknown_kind, self.resets, self.last_reset, lines)
