"""The reading behind the dashboard's rollouts screen: ``rollouts.jsonl`` -> frozen frames.

A :class:`RolloutsFeed` follows the file with a :class:`~telemetry.rollouts.RecordsTail`,
so each :meth:`RolloutsFeed.read` decodes only the lines appended since the last (a bounded
step of a long file, never the file again), and folds them into a
:class:`~sanctum.model.rollouts.RolloutsBook`. The screen calls it from a thread worker;
a lock keeps two reads (a closed screen's and a new one's) from interleaving. There is no
Textual here.
"""

from __future__ import annotations

import threading
from pathlib import Path

from sanctum.model.rollouts import RolloutsBook, RolloutsFrame
from telemetry.files import InputFileError, InputFileMissing, describe
from telemetry.rollouts import ROLLOUTS_FILE, RecordsTail

STEPS_PER_READ = 4
"""Bounded reads (:data:`~telemetry.rollouts.READ_BYTES` each) one :meth:`read` makes at
most before handing over a frame: a long file shows its progress while it is read."""


class RolloutsFeed:
    """Follows ``run_dir/rollouts.jsonl``, grouped by the run's ``rollouts_per_update``."""

    def __init__(self, run_dir: Path, per_update: int | None) -> None:
        self.path = run_dir / ROLLOUTS_FILE
        self.per_update = per_update
        self._tail = RecordsTail(self.path)
        self._book = RolloutsBook(per_update)
        self._resets = 0
        self._lock = threading.Lock()

    def read(self) -> RolloutsFrame:
        """Fold what was appended since the last read (up to :data:`STEPS_PER_READ` bounded
        steps; the frame says when more remains); a file that cannot be read is the
        frame's ``problem``, one line."""
        with self._lock:
            for _ in range(STEPS_PER_READ):
                try:
                    got = self._tail.read_new()
                except InputFileMissing:
                    return self._book.frame(
                        problem=f"{describe(self.path)}: no rollout records yet",
                        resets=self._resets,
                    )
                except InputFileError as exc:
                    return self._book.frame(problem=str(exc), resets=self._resets)
                if got.reset:
                    self._resets += 1
                    self._book = RolloutsBook(self.per_update)
                self._book.add(got.items)
                if not got.more:
                    return self._book.frame(resets=self._resets)
            return self._book.frame(reading=True, resets=self._resets)
