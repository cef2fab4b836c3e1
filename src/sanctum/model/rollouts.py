"""A token-level run's rollout records folded by update: the worst and the best of each.

``rollouts.jsonl`` (:mod:`telemetry.rollouts`) holds one record per generated sequence,
numbered in the run; the trainer numbers an update's ``rollouts_per_update`` records
together, so a record's update is ``id // rollouts_per_update`` (the figure the run
recorded in ``run_started.config``). The fold keeps, per update, its count, its mean
reward and its :data:`PER_SIDE_KEPT` lowest and highest ``reward_final`` records, for the
latest :data:`UPDATES_KEPT` updates: memory is bounded whatever the file holds. Nothing
here reads a file (:mod:`sanctum.live.rollouts_feed` does); a frame is frozen.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from telemetry.rollouts import RolloutRecord, SkippedRecord

PER_SIDE_KEPT: Final = 6
"""Records kept per update at each end (lowest and highest reward): more than a screen
shows."""
UPDATES_KEPT: Final = 100
"""Updates whose records are kept, the latest; older ones are counted, not kept."""
SKIPPED_KEPT: Final = 5
"""Skipped lines listed (with their number and why); the rest are counted."""


class Extremes:
    """The ``n`` lowest and ``n`` highest ``reward_final`` records of those added, in
    O(n) memory. Among equal rewards the later record wins at both ends (it shows what
    training has not fixed yet, or has only just learned)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._low: list[tuple[float, int, RolloutRecord]] = []
        self._high: list[tuple[float, int, RolloutRecord]] = []
        self._added = 0

    def add(self, record: RolloutRecord) -> None:
        self._added += 1
        reward = record.reward_final
        for heap, key in ((self._low, -reward), (self._high, reward)):
            heapq.heappush(heap, (key, self._added, record))
            if len(heap) > self.n:
                heapq.heappop(heap)

    @property
    def lowest(self) -> tuple[RolloutRecord, ...]:
        """The lowest first; among equals the later first."""
        return tuple(r for _, _, r in sorted(self._low, key=lambda x: (-x[0], -x[1])))

    @property
    def highest(self) -> tuple[RolloutRecord, ...]:
        """The highest first; among equals the later first."""
        return tuple(r for _, _, r in sorted(self._high, key=lambda x: (-x[0], -x[1])))


@dataclass(frozen=True, slots=True)
class UpdateSamples:
    """One update's records, as kept."""

    update: int | None
    """None: the run recorded no ``rollouts_per_update``, so every record is in one group."""
    count: int
    reward_mean: float
    worst: tuple[RolloutRecord, ...]
    """Lowest ``reward_final`` first."""
    best: tuple[RolloutRecord, ...]
    """Highest ``reward_final`` first."""


@dataclass(frozen=True, slots=True)
class RolloutsFrame:
    """What the rollouts screen shows: the kept updates, oldest first, and what was left out."""

    updates: tuple[UpdateSamples, ...] = ()
    records: int = 0
    """Records read."""
    skipped: int = 0
    """Lines that are not records."""
    skipped_lines: tuple[SkippedRecord, ...] = ()
    """The first :data:`SKIPPED_KEPT` of them."""
    dropped_updates: int = 0
    """Older updates whose records are no longer kept."""
    reading: bool = False
    """More of the file is still to be read (a long file is read in bounded steps)."""
    problem: str | None = None
    """Why the file could not be read (one line, escaped), or None."""
    resets: int = 0
    """Times the file was truncated or replaced and read again from the start."""


@dataclass
class _Fold:
    kept: Extremes
    count: int = 0
    total: float = 0.0


@dataclass
class RolloutsBook:
    """The fold of every record read so far (mutable; :meth:`frame` freezes it)."""

    per_update: int | None
    """The run's ``rollouts_per_update``; None: every record is one group."""
    _folds: dict[int | None, _Fold] = field(default_factory=dict)
    records: int = 0
    skipped: int = 0
    skipped_lines: list[SkippedRecord] = field(default_factory=list)
    dropped_updates: int = 0
    _dropped_below: int | None = None

    def add(self, items: Iterable[RolloutRecord | SkippedRecord]) -> None:
        for item in items:
            if isinstance(item, SkippedRecord):
                self.skipped += 1
                if len(self.skipped_lines) < SKIPPED_KEPT:
                    self.skipped_lines.append(item)
                continue
            self.records += 1
            self._fold(item)

    def _fold(self, record: RolloutRecord) -> None:
        key = None if self.per_update is None else record.id // self.per_update
        if key is not None and self._dropped_below is not None and key < self._dropped_below:
            return  # an update older than those kept
        fold = self._folds.get(key)
        if fold is None:
            fold = self._folds[key] = _Fold(Extremes(PER_SIDE_KEPT))
            if len(self._folds) > UPDATES_KEPT:
                oldest = min(k for k in self._folds if k is not None)
                del self._folds[oldest]
                self.dropped_updates += 1
                self._dropped_below = oldest + 1
                if oldest == key:
                    return
        fold.count += 1
        fold.total += record.reward_final
        fold.kept.add(record)

    def frame(
        self, *, reading: bool = False, problem: str | None = None, resets: int = 0
    ) -> RolloutsFrame:
        keys = sorted(self._folds, key=lambda k: -1 if k is None else k)
        updates = tuple(
            UpdateSamples(k, f.count, f.total / f.count, f.kept.lowest, f.kept.highest)
            for k in keys
            if (f := self._folds[k]).count
        )
        return RolloutsFrame(
            updates,
            self.records,
            self.skipped,
            tuple(self.skipped_lines),
            self.dropped_updates,
            reading,
            problem,
            resets,
        )
