"""Which updates the zoomable chart shows, and where its cursor is: pure maths, no drawing.

A :class:`ChartView` is the user's view of one metric: how many updates wide the window is
(``span``; None shows every update the snapshot keeps), which update sits at its right edge
(``end``; None follows the newest, so a live run scrolls in) and which update the cursor
reads (``cursor``; None reads the right edge). The view names *update indices*, not
positions in the series, because the series is a sliding window: once it is full, every
new update shifts the positions, and a window pinned to updates 40..79 must stay on them.
:func:`window_of` turns a view into positions of the snapshot's ``series_updates``; zoom,
pan and cursor moves are functions from a view to the next one. :func:`column_spans` maps
plot columns to updates: several columns per update when zoomed in, several updates per
column when the window is wider than the plot.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

MIN_SPAN: Final = 8
"""The fewest updates a zoomed-in window shows."""
ZOOM_FACTOR: Final = 2.0
"""How much one zoom step narrows (or widens) the window."""
PAN_SHARE: Final = 4
"""One pan step moves the window by a quarter of its width (at least one update)."""


@dataclass(frozen=True, slots=True)
class ChartView:
    """What the user asked to see; resolved against a snapshot by :func:`window_of`."""

    metric: str
    span: int | None = None
    """Updates in the window; None: every update the snapshot keeps."""
    end: int | None = None
    """Update index at the right edge; None: the newest (the window follows a live run)."""
    cursor: int | None = None
    """Update index the cursor reads; None: the window's right edge."""
    log: bool = False
    """A logarithmic value axis."""


@dataclass(frozen=True, slots=True)
class Window:
    """A view resolved to positions in the series: ``start <= cursor < stop``."""

    start: int
    stop: int
    """One past the last position shown."""
    cursor: int
    """Position the cursor reads (-1 when the series is empty)."""

    @property
    def count(self) -> int:
        """Updates in the window."""
        return self.stop - self.start


def position_of(update: int, updates: Sequence[int]) -> int:
    """The position of ``update`` in the ascending ``updates``, or of the last update before
    it (the first position when it is older than all of them)."""
    return max(0, bisect_right(updates, update) - 1)


def window_of(view: ChartView, updates: Sequence[int]) -> Window:
    """The positions ``view`` shows in a series whose update indices are ``updates``."""
    n = len(updates)
    if n == 0:
        return Window(0, 0, -1)
    span = n if view.span is None else max(1, min(view.span, n))
    stop = n if view.end is None else position_of(view.end, updates) + 1
    start = max(0, stop - span)
    stop = min(n, start + span)
    cursor = stop - 1 if view.cursor is None else position_of(view.cursor, updates)
    return Window(start, stop, min(stop - 1, max(start, cursor)))


def _placed(view: ChartView, updates: Sequence[int], start: int, span: int) -> ChartView:
    """``view`` showing ``span`` updates from position ``start`` (clamped into the series);
    a window that reaches the newest update follows the run, one of all of them is None."""
    n = len(updates)
    start = max(0, min(start, n - span))
    stop = start + span
    return replace(
        view,
        span=None if span >= n else span,
        end=None if stop >= n else updates[stop - 1],
    )


def zoom(view: ChartView, updates: Sequence[int], factor: float) -> ChartView:
    """Narrow the window ``factor``-fold (below 1 widens it), keeping the update under the
    cursor where it is on the screen; never narrower than :data:`MIN_SPAN` updates."""
    n = len(updates)
    if n == 0:
        return view
    window = window_of(view, updates)
    span = max(min(MIN_SPAN, n), min(n, round(window.count / factor)))
    share = (window.cursor - window.start) / max(1, window.count - 1)
    start = window.cursor - round(share * (span - 1))
    return _placed(view, updates, start, span)


def pan(view: ChartView, updates: Sequence[int], direction: int) -> ChartView:
    """Move the window a quarter of its width older (``direction`` < 0) or newer (> 0); an
    explicit cursor moves with it."""
    window = window_of(view, updates)
    if window.count == 0:
        return view
    step = max(1, window.count // PAN_SHARE) * (1 if direction > 0 else -1)
    moved = _placed(view, updates, window.start + step, window.count)
    if view.cursor is None:
        return moved
    cursor = max(0, min(len(updates) - 1, window.cursor + step))
    return replace(moved, cursor=updates[cursor])


def move_cursor(view: ChartView, updates: Sequence[int], steps: int) -> ChartView:
    """Move the cursor ``steps`` updates (negative: older), taking the window along when it
    leaves it; on the newest update of a following window the cursor follows the run."""
    window = window_of(view, updates)
    if window.count == 0:
        return view
    return cursor_to(view, updates, window.cursor + steps)


def cursor_to(view: ChartView, updates: Sequence[int], position: int) -> ChartView:
    """Put the cursor on the update at ``position`` (clamped), scrolling it into view."""
    window = window_of(view, updates)
    if window.count == 0:
        return view
    position = max(0, min(len(updates) - 1, position))
    start = window.start
    if position < start:
        start = position
    elif position >= window.stop:
        start = position - window.count + 1
    moved = _placed(view, updates, start, window.count)
    following = moved.end is None and position == len(updates) - 1
    return replace(moved, cursor=None if following else updates[position])


def to_edge(view: ChartView, updates: Sequence[int], newest: bool) -> ChartView:
    """The same width at the oldest updates kept, or at the newest (following the run)."""
    window = window_of(view, updates)
    if window.count == 0:
        return view
    start = len(updates) - window.count if newest else 0
    moved = _placed(view, updates, start, window.count)
    return replace(moved, cursor=None if newest else updates[0])


def whole(view: ChartView) -> ChartView:
    """Every update kept, following the run, the cursor on the newest."""
    return replace(view, span=None, end=None, cursor=None)


def column_spans(count: int, width: int) -> list[tuple[int, int] | None]:
    """For each of ``width`` plot columns, the offsets ``[lo, hi)`` of the window's updates
    it draws (None for every column of an empty window).

    The window fills the plot: with at most ``width`` updates each gets one or more
    neighbouring columns, with more each column draws ``count / width`` neighbouring updates.
    """
    if count <= 0 or width <= 0:
        return [None] * max(0, width)
    spans: list[tuple[int, int] | None] = []
    for k in range(width):
        lo = k * count // width
        spans.append((lo, max(lo + 1, (k + 1) * count // width)))
    return spans


def offset_at(spans: Sequence[tuple[int, int] | None], column: int) -> int | None:
    """The window offset of the update drawn in ``column`` (the first of a shared column);
    None off the plot or on a blank column."""
    if not 0 <= column < len(spans):
        return None
    span = spans[column]
    return None if span is None else span[0]
