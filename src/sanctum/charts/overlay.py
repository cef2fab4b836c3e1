"""Pure drawing of the overlay chart: one metric of several runs on a shared axis of updates.

Each run is a line of braille dots (two columns and four rows of dots a cell), so ten runs
fit a terminal chart with room to see where they part. Each run is its whole history,
down-sampled (:mod:`sanctum.model.downsample`): a point is a bucket of updates, drawn in the
columns of the updates it covers with its smallest to largest value as a vertical span, so a
long run is drawn from its first update with its spikes kept. KeyedSpans share the x axis
(update index) and the value axis, fitted to every run's values
(:func:`sanctum.charts.scale.fit`; on a log scale it takes in the rule's warning and
critical lines, drawn ``┄`` and ``━`` where no dot is). A cell where lines cross takes the
colour of the run drawn last (the later row of the table). A value that is not measured
leaves a gap; a non-finite one leaves a gap and an ``×`` in the top row (a bucket that
covers one: the ``×`` too); on a log scale a value at or below zero is drawn on the bottom
edge. The result is rows of (text, key) spans; the widget maps a key to a style: an ``int``
is a colour index, ``axis``, ``warning`` and ``critical`` the axis and the lines, ``""``
blank.

A live chart is drawn again with every frame, so :class:`OverlayCanvas` keeps each run's
dots and draws only the updates that arrived since: the x axis runs from a round number
at or before the first update to one past the latest, so it (and with it every dot drawn)
stays put while the lines grow into it, and everything is drawn afresh only when an axis
changes. A run is drawn afresh too when its newest drawn bucket took in more updates or
its buckets merged, so a canvas kept across frames draws what a fresh one draws.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Final

from sanctum.charts.glyphs import (
    AXIS_ROWS,
    CRITICAL_LINE,
    NONFINITE_MARK,
    WARNING_LINE,
    KeyedSpans,
    StyleKey,
)
from sanctum.charts.scale import Scale, fit, nice_step
from sanctum.model.downsample import Bucket

BRAILLE: Final = 0x2800
DOTS: Final = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
"""The dot bit of (left, right) column and row 0..3 from the top of a braille cell."""
SIDE: Final = (0x01 | 0x02 | 0x04 | 0x40, 0x08 | 0x10 | 0x20 | 0x80)
"""Every dot of the left and of the right column of a cell."""
GLYPHS: Final = (" ", *(chr(BRAILLE + bits) for bits in range(1, 256)))
X_STEPS: Final = 4
"""About how many round steps the x axis spans."""


@dataclass(frozen=True, slots=True)
class Series:
    """One run's line: its buckets by update (ascending), the colour index to draw it with,
    and how many updates a full bucket covers."""

    buckets: Sequence[Bucket]
    colour: int
    span: int = 1

    @classmethod
    def raw(cls, updates: Sequence[int], values: Sequence[float | None], colour: int) -> Series:
        """A line of one value an update."""
        return cls(tuple(map(Bucket.of, updates, values)), colour)


@dataclass(frozen=True, slots=True)
class Geometry:
    """The plot: ``cols`` x ``rows`` cells, updates ``x0`` to ``x1`` across, ``scale`` up."""

    cols: int
    rows: int
    x0: int
    x1: int
    scale: Scale

    @property
    def width_px(self) -> int:
        return 2 * self.cols

    @property
    def height_px(self) -> int:
        return 4 * self.rows

    def x_of(self, update: int) -> int:
        return int((update - self.x0) * (self.width_px - 1) / (self.x1 - self.x0) + 0.5)

    def y_of(self, value: float) -> int:
        fraction = min(1.0, max(0.0, self.scale.fraction(value)))
        return round(fraction * (self.height_px - 1))

    def pixel_y(self) -> Callable[[float], int]:
        """Value -> pixel row from the bottom, clamped to the axis (one closure a plot)."""
        top_px, scale = self.height_px - 1, self.scale
        if scale.log:
            low = math.log10(scale.bottom)
            k = top_px / (math.log10(scale.top) - low)
            log10 = math.log10

            def log_y(value: float) -> int:
                y = int((log10(value) - low) * k + 0.5) if value > 0 else 0
                return 0 if y < 0 else top_px if y > top_px else y

            return log_y
        # on halves (exact), so that an axis past float's range (-1e308 to 1e308) does not
        # overflow; clamped before int(), as a value far off the axis may be inf pixels away
        half_bottom, k = scale.bottom / 2, top_px / (scale.top / 2 - scale.bottom / 2)

        def linear_y(value: float) -> int:
            y = (value / 2 - half_bottom) * k + 0.5
            return 0 if y < 0 else top_px if y > top_px else int(y)

        return linear_y


@dataclass
class _Line:
    """One run's dots on one geometry, extended with each new update."""

    geometry: Geometry
    colour: int
    first: int
    """The oldest update drawn."""
    span: int
    """Updates a full bucket covered when drawn."""
    last: int | None = None
    """The newest update drawn: the end of the newest bucket drawn."""
    cells: dict[int, int] = field(default_factory=dict)
    """Cell index -> its dots."""
    marks: dict[int, int] = field(default_factory=dict)
    """Cell column of a non-finite value -> the colour."""
    low: list[int] = field(default_factory=list)
    high: list[int] = field(default_factory=list)
    prev: tuple[int, int] | None = None
    """The last dot drawn (x, y); None after a gap."""

    def __post_init__(self) -> None:
        width = self.geometry.width_px
        self.low, self.high = [self.geometry.height_px] * width, [-1] * width

    def holds(self, buckets: Sequence[Bucket]) -> bool:
        """Whether the buckets drawn are still as drawn: one ends at the newest update
        drawn (a bucket that took in more updates since ends later)."""
        if self.last is None:
            return True
        at = bisect_right(buckets, self.last, key=_last)
        return at > 0 and buckets[at - 1].last == self.last

    def extend(self, series: Series) -> None:
        """Draw the buckets of ``series`` newer than ``last``: each pixel column gets one
        span of dots, from the previous column's last height to its own lowest and
        highest, so a steep line stays whole (and a bucket's values all show)."""
        buckets = series.buckets
        start = 0 if self.last is None else bisect_right(buckets, self.last, key=_last)
        if start >= len(buckets):
            return
        touched: set[int] = set()
        g, low, high = self.geometry, self.low, self.high
        to_y, sx, x0 = g.pixel_y(), (g.width_px - 1) / (g.x1 - g.x0), g.x0
        prev = self.prev
        for i in range(start, len(buckets)):
            bucket = buckets[i]
            value, x = bucket.value, int((bucket.last - x0) * sx + 0.5)
            if bucket.nonfinite:
                self.marks[x >> 1] = self.colour
            if bucket.low is None or bucket.high is None:  # nothing finite measured
                prev = None
                continue
            finite = value is not None and value - value == 0.0
            y = to_y(value) if finite and value is not None else to_y(bucket.high)
            begin = y if prev is None else prev[1]
            x_first = x if bucket.count == 1 else int((bucket.first - x0) * sx + 0.5)
            if prev is not None and x_first > prev[0] + 1:  # the columns between: interpolated
                step = (y - prev[1]) / (x_first - prev[0])
                for xx in range(prev[0] + 1, x_first):
                    yy = prev[1] + round(step * (xx - prev[0]))
                    low[xx], high[xx] = min(low[xx], begin, yy), max(high[xx], begin, yy)
                    touched.add(xx)
                    begin = yy
            bottom, top = to_y(bucket.low), to_y(bucket.high)
            for xx in range(x_first, x + 1):  # the columns the bucket's updates cover
                low[xx], high[xx] = min(low[xx], begin, y, bottom), max(high[xx], begin, y, top)
                touched.add(xx)
            prev = (x, y) if finite else None  # a newest value not measured: a gap after
        fresh = self.last is None
        self.prev, self.last = prev, buckets[-1].last
        for x in touched:
            self._draw_column(x, fresh)

    def _draw_column(self, x: int, fresh: bool) -> None:
        """Draw pixel column ``x`` from its span (``fresh``: nothing drawn there yet)."""
        g, cells = self.geometry, self.cells
        top, cols, side, cell_x = g.height_px - 1, g.cols, x & 1, x >> 1
        for row in () if fresh else range(g.rows):  # clear what the column drew before
            cell = row * cols + cell_x
            kept = cells.pop(cell, 0) & ~SIDE[side]
            if kept:
                cells[cell] = kept
        bit = DOTS[side]
        for y in range(self.low[x], self.high[x] + 1):
            down = top - y
            cell = (down >> 2) * cols + cell_x
            cells[cell] = cells.get(cell, 0) | bit[down & 3]


class OverlayCanvas:
    """Draws the overlay frame after frame, keeping each run's dots (see the module
    docstring); ``clear`` when the metric or the colours change."""

    def __init__(self) -> None:
        self._lines: dict[int, _Line] = {}
        self._log = False

    def clear(self) -> None:
        self._lines.clear()

    def rows(
        self,
        series: Sequence[Series],
        width: int,
        height: int,
        *,
        log: bool = False,
        lines: tuple[float | None, float | None] = (None, None),
        bounds: tuple[float | None, float | None] = (None, None),
    ) -> list[KeyedSpans]:
        """``height`` rows of exactly ``width`` cells: the plot with its value labels, the
        axis, and the update indices at its ends. ``lines``: (warning, critical);
        ``bounds``: what the metric can be (the axis stops there)."""
        drawn = [(i, s) for i, s in enumerate(series) if s.buckets]
        if log != self._log:
            self.clear()
            self._log = log
        if not drawn:
            blank: KeyedSpans = [(" " * width, "")]
            return [[("no update yet".ljust(width)[:width], "axis")], *([blank] * (height - 1))]
        scale = fit(self._extents(drawn), lines, log=log, bounds=bounds)
        x0, x1 = x_axis(
            min(s.buckets[0].first for _, s in drawn), max(s.buckets[-1].last for _, s in drawn)
        )
        labels = _labels(scale, max(1, height - AXIS_ROWS))
        label_width = max(len(text) for text in labels.values())
        geometry = Geometry(
            max(1, width - label_width - 1), max(1, height - AXIS_ROWS), x0, x1, scale
        )
        bits, keys, marks = self._draw(drawn, geometry)
        rules = _rule_rows(geometry, lines)
        rows = [
            [
                (labels.get(r, "").rjust(label_width), "axis"),
                ("┤" if r in labels else "│", "axis"),
                *_plot_row(bits, keys, geometry.cols, r, rules.get(r), marks if r == 0 else {}),
            ]
            for r in range(geometry.rows)
        ]
        rows.append([(" " * label_width + "└" + "─" * geometry.cols, "axis")])
        rows.append([(_x_labels(x0, x1, label_width + 1, width), "axis")])
        return rows[:height]

    def _extents(self, drawn: list[tuple[int, Series]]) -> list[float]:
        """The smallest and largest drawable value of each run."""
        found: list[float] = []
        for _, s in drawn:
            lows = [b.low_positive if self._log else b.low for b in s.buckets]
            highs = [b.high for b in s.buckets]
            low = min((v for v in lows if v is not None), default=None)
            high = max((v for v in highs if v is not None), default=None)
            if self._log and high is not None and high <= 0:
                high = None
            found += [v for v in (low, high) if v is not None]
        return found

    def _draw(
        self, drawn: list[tuple[int, Series]], geometry: Geometry
    ) -> tuple[list[int], list[StyleKey], dict[int, int]]:
        """Every run's dots on one canvas, later runs over earlier ones."""
        bits = [0] * (geometry.cols * geometry.rows)
        keys: list[StyleKey] = [""] * len(bits)
        marks: dict[int, int] = {}
        for i, s in drawn:
            line = self._lines.get(i)
            if (
                line is None
                or line.geometry != geometry
                or line.colour != s.colour
                or line.span != s.span
                or s.buckets[0].first != line.first
                or not line.holds(s.buckets)
            ):
                line = self._lines[i] = _Line(geometry, s.colour, s.buckets[0].first, s.span)
            line.extend(s)
            for cell, dots in line.cells.items():
                bits[cell] |= dots
                keys[cell] = s.colour
            marks.update(line.marks)
        return bits, keys, marks


def _last(bucket: Bucket) -> int:
    return bucket.last


def x_axis(first: int, last: int) -> tuple[int, int]:
    """The x axis for updates ``first..last``: from a round number at or before the
    first to one past the last, in steps of 1, 2 or 5 times a power of ten."""
    step = max(1, int(nice_step(max(1.0, (last - first) / X_STEPS))))
    return first // step * step, (last // step + 1) * step


def _labels(scale: Scale, rows: int) -> dict[int, str]:
    """Row -> value label, for the ticks that land on a row of their own."""
    labels: dict[int, str] = {}
    for tick in scale.ticks():
        fraction = scale.fraction(tick)
        row = rows - 1 - round(min(1.0, max(0.0, fraction)) * (rows - 1))
        if not labels or (row not in labels and all(abs(row - o) > 1 for o in labels)):
            labels[row] = scale.label(tick)
    return labels


def _rule_rows(geometry: Geometry, lines: tuple[float | None, float | None]) -> dict[int, str]:
    """Row -> ``warning`` or ``critical`` for the rule's lines inside the axis."""
    rows: dict[int, str] = {}
    for value, key in zip(lines, ("warning", "critical"), strict=True):
        if value is None or not 0.0 <= geometry.scale.fraction(value) <= 1.0:
            continue
        rows[(geometry.height_px - 1 - geometry.y_of(value)) // 4] = key
    return rows


def _plot_row(
    bits: list[int],
    keys: list[StyleKey],
    cols: int,
    row: int,
    rule: str | None,
    marks: dict[int, int],
) -> KeyedSpans:
    """One row of cells as spans of one key each (a rule's line where no dot is)."""
    base = row * cols
    texts = [GLYPHS[b] for b in bits[base : base + cols]]
    row_keys = keys[base : base + cols]
    if rule is not None:
        line = WARNING_LINE if rule == "warning" else CRITICAL_LINE
        for col, key in enumerate(row_keys):
            if key == "":
                texts[col], row_keys[col] = line, rule
    for col, colour in marks.items():
        texts[col], row_keys[col] = NONFINITE_MARK, colour
    spans: KeyedSpans = []
    at = 0
    for key, same in groupby(row_keys):
        n = sum(1 for _ in same)
        spans.append(("".join(texts[at : at + n]), key))
        at += n
    return spans


def _x_labels(x0: int, x1: int, indent: int, width: int) -> str:
    """The first update under the start of the axis, the last under its end."""
    first, last = str(x0), str(x1)
    room = width - indent
    if x1 == x0 or len(first) + len(last) + 1 > room:
        return (" " * indent + last.rjust(room))[:width]
    middle = "updates"
    gap = room - len(first) - len(last)
    text = first + middle.center(gap) + last if gap >= len(middle) + 2 else first + " " * gap + last
    return " " * indent + text
