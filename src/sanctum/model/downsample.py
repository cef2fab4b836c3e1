"""A run's whole history of one metric in bounded memory: a fixed number of buckets.

The run table's overlay draws every run from its first update to its latest, and a run may
have a million updates, so a run keeps at most :data:`CAPACITY` buckets of each overlaid
metric. Each bucket covers a range of updates and keeps their smallest and largest finite
value, their newest value and whether any was non-finite, so a chart column that covers
several updates draws their span and still marks a NaN. Until the buckets are full, each
holds one update (a short run is drawn point by point); when they are, adjacent pairs
merge and every bucket covers twice as many updates as before. Merging keeps the extremes
exact: a bucket's smallest and largest value are those of the raw values it covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

CAPACITY: Final = 512
"""Buckets kept per run and metric: more than the pixel columns of a wide terminal's chart
(two a cell), so a column never shows fewer updates than one bucket covers."""


def _least(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _most(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Updates ``first`` to ``last`` (``count`` of them) of one metric."""

    first: int
    last: int
    count: int
    value: float | None
    """The newest value (None: that update did not measure it; NaN and inf as they are)."""
    low: float | None
    """The smallest finite value (None: none was finite)."""
    high: float | None
    """The largest finite value."""
    low_positive: float | None
    """The smallest finite value above zero (what a log scale can draw)."""
    nonfinite: bool
    """Whether any value was NaN or infinite."""

    @classmethod
    def of(cls, update: int, value: float | None) -> Bucket:
        """One update's value alone."""
        finite = value is not None and math.isfinite(value)
        kept = value if finite else None
        positive = kept if kept is not None and kept > 0 else None
        return cls(update, update, 1, value, kept, kept, positive, value is not None and not finite)

    def merge(self, newer: Bucket) -> Bucket:
        """This bucket and the ``newer`` one right after it, as one."""
        return Bucket(
            self.first,
            newer.last,
            self.count + newer.count,
            newer.value,
            _least(self.low, newer.low),
            _most(self.high, newer.high),
            _least(self.low_positive, newer.low_positive),
            self.nonfinite or newer.nonfinite,
        )


class DownsampledHistory:
    """One metric of one run, oldest first, in at most ``capacity`` buckets (even).

    The newest bucket is kept open as plain numbers (folding a value in allocates nothing:
    the run table folds every overlay metric of every update); the others are closed.
    """

    def __init__(self, capacity: int = CAPACITY) -> None:
        if capacity < 2 or capacity % 2:
            raise ValueError(f"capacity must be even and at least 2, not {capacity}")
        self.capacity = capacity
        self.span = 1
        """Updates each full bucket covers (the newest may cover fewer)."""
        self._closed: list[Bucket] = []
        self._count = 0
        """Updates in the open bucket (0: none yet)."""
        self._first = self._last = 0
        self._value: float | None = None
        self._low: float | None = None
        self._high: float | None = None
        self._low_positive: float | None = None
        self._nonfinite = False

    def add(self, update: int, value: float | None) -> None:
        """Fold in ``value`` at ``update``; an update not after the newest one is a logging
        bug (the verdict says so), not a point, and is left out."""
        if self._count:
            if update <= self._last:
                return
            if self._count == self.span:
                self._close()
        if not self._count:
            self._first = update
            self._low = self._high = self._low_positive = None
            self._nonfinite = False
        self._count += 1
        self._last, self._value = update, value
        if value is None:
            return
        if value - value != 0.0:  # NaN or infinite
            self._nonfinite = True
            return
        if self._low is None or value < self._low:
            self._low = value
        if self._high is None or value > self._high:
            self._high = value
        if value > 0 and (self._low_positive is None or value < self._low_positive):
            self._low_positive = value

    def _close(self) -> None:
        """Close the open bucket; a full list merges in pairs, each covering twice as many
        updates as before."""
        closed = self._closed
        closed.append(self._open())
        self._count = 0
        if len(closed) == self.capacity:
            self._closed = [closed[i].merge(closed[i + 1]) for i in range(0, len(closed), 2)]
            self.span *= 2

    def _open(self) -> Bucket:
        low, high, positive = self._low, self._high, self._low_positive
        return Bucket(
            self._first, self._last, self._count, self._value, low, high, positive, self._nonfinite
        )

    def frozen(self) -> tuple[Bucket, ...]:
        """The buckets now, oldest first."""
        return (*self._closed, self._open()) if self._count else tuple(self._closed)
