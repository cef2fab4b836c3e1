"""The run's pace and the stall limit it sets, in seconds and in words.

A stall is a silence longer than the run's own pace allows: ``stall_pace`` times the
median of the recent intervals between its updates and heartbeats (its progress events:
a rollout and the update it feeds come together, so counting every event would halve the
pace), and never less than ``stall_seconds``. Until the run has a pace (a few intervals)
no silence is judged a stall: a large model may load for minutes before its first update.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from typing import Final

from sanctum.health.thresholds import Thresholds

PACE_WINDOW: Final = 25
"""Intervals between progress events the pace is the median of: the recent ones, so a run
whose pace changes is judged by its recent pace."""
PACE_MIN_INTERVALS: Final = 3
"""Intervals it takes before a run has a pace, and so before a silence can be a stall."""


class Pace:
    """One run's pace: the median of its recent intervals between progress events."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.stall_seconds = thresholds.stall_seconds
        """The stall limit's floor (:attr:`Thresholds.stall_seconds`)."""
        self._stall_pace = thresholds.stall_pace
        self._intervals: deque[float] = deque(maxlen=PACE_WINDOW)
        """The latest intervals, in arrival order: an append per progress event, sorted
        only when the pace is asked for (a silence, a snapshot), and cached until then."""
        self._median: float | None = None
        """The median of ``_intervals`` when last asked for (None: changed since)."""
        self._last: float | None = None
        """``ts`` of the latest update or heartbeat (the pace is measured between them)."""
        self._stalled = False
        """A stall ended after the latest progress event: the interval that spans it is
        left out of the pace (as a critical value is left out of a rule's baseline)."""
        self.arrived: list[float] = []
        """``ts`` of the progress events not folded in yet, in order: the fold appends each
        (one C call on its hot path: ``arrived.append``), and the pace folds them in
        (:meth:`settle`) before it answers and at the end of each reader batch."""

    def progress(self, ts: float) -> None:
        """An update or a heartbeat at ``ts`` (folded in when the pace is next asked)."""
        self.arrived.append(ts)

    def settle(self) -> None:
        """Fold in the progress events that arrived: the interval since the one before
        each joins the pace (unless a stall ended within it, or the clock went back)."""
        arrived = self.arrived
        if not arrived:
            return
        last, stalled, intervals = self._last, self._stalled, self._intervals
        for ts in arrived:
            if last is not None and not stalled:
                interval = ts - last
                if 0 <= interval < math.inf:  # NaN fails both comparisons
                    intervals.append(interval)
                    self._median = None
            stalled = False
            if last is None or ts > last:
                last = ts
        self._last, self._stalled = last, stalled
        arrived.clear()

    def stalled(self) -> None:
        """A stall just ended: the interval that spans it says nothing of the pace."""
        self.settle()
        self._stalled = True

    @property
    def seconds(self) -> float | None:
        """The median of the recent intervals between updates and heartbeats, in seconds;
        None until there are PACE_MIN_INTERVALS of them."""
        self.settle()
        intervals = self._intervals
        if len(intervals) < PACE_MIN_INTERVALS:
            return None
        if self._median is None:
            self._median = statistics.median(intervals)
        return self._median

    def stall_limit(self) -> float | None:
        """The longest silence that is not a stall: ``stall_pace`` times the run's pace,
        at least ``stall_seconds``; None while the run has no pace (no stall is judged)."""
        pace = self.seconds
        if pace is None:
            return None
        return max(self.stall_seconds, self._stall_pace * pace)


def seconds_text(seconds: float) -> str:
    """``412 s``, ``7.5 s``, ``0.05 s``: a silence or an interval in seconds."""
    if not math.isfinite(seconds):
        return f"{seconds} s"
    if abs(seconds) >= 10:
        return f"{seconds:.0f} s"
    return f"{seconds:.1f} s" if abs(seconds) >= 1 else f"{seconds:.2g} s"


def over_words(thresholds: Thresholds, pace: float | None) -> str:
    """Which limit a silence went past: ``over 10x the run's median interval of 30 s``
    when the run's pace set it, else ``over the 120 s floor``."""
    if pace is not None and thresholds.stall_pace * pace > thresholds.stall_seconds:
        return f"over {thresholds.stall_pace:g}x the run's median interval of {seconds_text(pace)}"
    return f"over the {thresholds.stall_seconds:g} s floor"


def limit_words(thresholds: Thresholds) -> str:
    """The stall limit in words: ``120 s, or 10x the run's median interval if longer``."""
    return (
        f"{thresholds.stall_seconds:g} s, or {thresholds.stall_pace:g}x the run's median "
        "interval if longer"
    )
