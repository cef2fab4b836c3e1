"""Per-rollout records of token-level PPO: ``runs/<run>/rollouts.jsonl``, one line each.

A record holds everything needed to recompute the rollout's learning signals: the tokens,
the digit heads' answer and the truth, every term of the reward, and per generated token
the action, ``logp_old``, entropy and value. Lines are written by an
:class:`~telemetry.eventlog.EventLogWriter` (one flushed ``write`` per line, one writer per
file, no torn line on a full disk), so the file is as crash-safe as the event log.

Reading is for people debugging a run (``sanctum rollouts``, the dashboard's rollouts
screen, which follows the file as it grows with :class:`RecordsTail`): a line that is not
a record is skipped and counted with its number, never an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Final, Literal

import msgspec

from telemetry.eventlog import MAX_LINE_BYTES
from telemetry.files import bounded_lines, open_input

ROLLOUTS_FILE = "rollouts.jsonl"
"""The records' file name, beside ``events.jsonl`` in the run folder."""
WHAT: Final = "rollouts file"
"""What the file is called in a message about it."""

TerminatedBy = Literal["answer", "max_new_tokens"]


class RolloutRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One generated sequence and how it was rewarded (the design's fields, exactly)."""

    id: int
    """0-based index of the rollout in the run."""
    input_ids: list[int]
    """The prompt's token ids."""
    generated_ids: list[int]
    """The generated ids, the answer token included when it was generated."""
    terminated_by: TerminatedBy
    """``answer``: the answer token was generated; ``max_new_tokens``: the length ran out."""
    num_generated: int
    """``len(generated_ids)``: the length the length penalty charges."""
    digit_probs: list[list[float]]
    """The digit heads' probabilities of 0-9 per answer position, read at the last token."""
    digit_pred: list[int]
    """The most probable digit per position."""
    digit_true: list[int]
    """The correct digit per position."""
    reward_full: float
    """1.0 when every predicted digit is right (and the answer token was reached), else 0."""
    partial_scale: float
    keep_prob: list[float]
    """Per position: the probability that a position whose true digit is 0 counts."""
    applied_mask: list[bool]
    """Which positions counted: a non-zero true digit always, a zero one when sampled."""
    applied_count: int
    correct_count: int
    """Right predictions among the applied positions."""
    reward_partial: float
    """``partial_scale * correct_count / applied_count`` (0 when none applied)."""
    length_penalty: float
    reward_final: float
    """The reward trained on: ``reward - length_penalty * num_generated``, where reward is
    ``reward_full`` when it is 1, 0 for a ``max_new_tokens`` stop, else ``reward_partial``."""
    actions: list[int]
    """The sampled ids, one per generated token (equal to ``generated_ids``)."""
    logp_old: list[float]
    """log pi(action) under the sampling policy, one per generated token."""
    entropy: list[float]
    """Entropy of the (masked) sampling distribution, one per generated token."""
    values: list[float]
    """The critic's V_t before each generated token; the advantage is reward_final - V_t."""


@dataclass(frozen=True)
class SkippedRecord:
    """A line of ``rollouts.jsonl`` that is not a record, and why."""

    line_no: int
    detail: str


_DECODER = msgspec.json.Decoder(RolloutRecord)


def iter_records(path: str | os.PathLike[str]) -> Iterator[RolloutRecord | SkippedRecord]:
    """Every line of ``path`` in order, as a record or as a skipped line (a last line
    without its newline is still being written and is left out).

    The file is opened at once through the one opener (a regular file only: a FIFO or a
    device is an :class:`~telemetry.files.InputFileError`, one line), and a line longer
    than :data:`~telemetry.eventlog.MAX_LINE_BYTES` is skipped without being held.
    """
    return _records(open_input(path, WHAT))


def _records(fh: IO[bytes]) -> Iterator[RolloutRecord | SkippedRecord]:
    with fh:
        yield from _decoded(fh, 0)


def _decoded(fh: IO[bytes], lines_before: int) -> Iterator[RolloutRecord | SkippedRecord]:
    """The complete lines from ``fh``'s position on, numbered after ``lines_before``; a
    line without its newline ends them."""
    for line_no, line in enumerate(bounded_lines(fh, MAX_LINE_BYTES), start=lines_before + 1):
        if line is None:
            yield SkippedRecord(line_no, f"longer than the {MAX_LINE_BYTES} byte limit")
            continue
        if not line.endswith(b"\n"):
            return
        try:
            yield _DECODER.decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            yield SkippedRecord(line_no, str(exc) or "nested too deeply")


READ_BYTES: Final = 4 * 1024 * 1024
"""How much one :meth:`RecordsTail.read_new` reads at most (a line is never cut)."""


@dataclass(frozen=True)
class RecordsRead:
    """What one :meth:`RecordsTail.read_new` found."""

    items: list[RolloutRecord | SkippedRecord] = field(default_factory=list)
    reset: bool = False
    """The file was truncated or replaced: ``items`` are its lines from the first."""
    more: bool = False
    """Complete lines may remain after these: read again at once."""


class RecordsTail:
    """Follows ``rollouts.jsonl`` as the trainer appends to it: each :meth:`read_new`
    decodes only the complete lines written since the last (at most about
    :data:`READ_BYTES`), so a live view never reads the file again from the start. Lines
    are decoded and skipped exactly as by :func:`iter_records`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.offset = 0
        """Bytes read: the start of the first line not read yet."""
        self.lines = 0
        """Lines read (records and skipped lines)."""
        self._identity: tuple[int, int] | None = None

    def read_new(self, max_bytes: int = READ_BYTES) -> RecordsRead:
        """The lines appended since the last call. Raises
        :class:`~telemetry.files.InputFileError` (:class:`~telemetry.files.InputFileMissing`
        while there is no file) with nothing consumed."""
        with open_input(self.path, WHAT) as fh:
            st = os.fstat(fh.fileno())
            identity = (st.st_dev, st.st_ino)
            reset = self._identity is not None and (
                identity != self._identity or st.st_size < self.offset
            )
            self._identity = identity
            if reset:
                self.offset = self.lines = 0
            start = self.offset
            fh.seek(start)
            items: list[RolloutRecord | SkippedRecord] = []
            for item in _decoded(fh, self.lines):
                items.append(item)
                self.lines += 1
                self.offset = fh.tell()
                if self.offset - start >= max_bytes:
                    break
            return RecordsRead(items, reset, more=self.offset - start >= max_bytes)
