"""The marks every chart and panel draws with, as plain strings: one home for each glyph.

Blocks, trend arrows, the marks for values a chart cannot place, the warning and critical
lines, a sparkline and a progress bar: no Rich, so the words in :mod:`sanctum.text` use them
without loading a renderer. The renderers (:mod:`sanctum.charts.drawing`, ``zoom``,
``overlay``) and the widgets draw with the same ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from sanctum.model.trend import Trend

BARS: Final = "▁▂▃▄▅▆▇█"
"""Eighth blocks, lowest first."""
_PARTIAL: Final = " ▏▎▍▌▋▊▉"
"""Left-aligned eighth blocks for the progress bar, empty first."""
TREND_UP: Final = "↑"
TREND_DOWN: Final = "↓"
TREND_FLAT: Final = "→"
TREND_UNKNOWN: Final = " "
"""Fewer than two finite values: no direction to show."""
NONFINITE_MARK: Final = "×"
"""A NaN or infinite value in a sparkline or below a chart."""
CLIPPED_MARK: Final = "▲"
"""A chart value above the fixed scale (or +Inf)."""
BELOW_MARK: Final = "▼"
"""A chart value below zero (possible with the k1 estimator)."""
WARNING_LINE: Final = "┄"
"""A rule's warning line across a chart, and its name in a legend."""
CRITICAL_LINE: Final = "━"
"""A rule's critical line across a chart, and its name in a legend."""
AXIS_ROWS: Final = 2
"""Rows under a chart's plot: the axis line and the update indices."""


ARROWS: Final[dict[Trend, str]] = {
    "up": TREND_UP,
    "down": TREND_DOWN,
    "flat": TREND_FLAT,
    "unknown": TREND_UNKNOWN,
}
"""The arrow for each direction the core computed (:func:`sanctum.model.trend.trend_of`)."""


def bar_blocks(eighths: int, height: int) -> list[str | None]:
    """A bar ``eighths`` eighths of a cell tall in a column of ``height`` rows, from the
    bottom: full blocks, then the partial one on top; None above the bar."""
    return [
        BARS[min(8, eighths - row * 8) - 1] if eighths > row * 8 else None for row in range(height)
    ]


def between(value: float, low: float, high: float) -> float:
    """Where ``value`` sits from ``low`` (0) to ``high`` (1), for any finite three: taken on
    halves, which is exact, so that an extent past float's range (1e308 - -1e308) does not
    overflow to inf and every position to NaN. ``high`` must be above ``low``."""
    return (value / 2 - low / 2) / (high / 2 - low / 2)


def sparkline(values: Sequence[float], width: int) -> str:
    """The last ``width`` values as eighth blocks, newest at the right, auto-scaled.

    Shorter series are padded on the left with spaces; a constant series sits at mid height;
    non-finite values are :data:`NONFINITE_MARK`.
    """
    window = list(values[-width:]) if width > 0 else []
    finite = [v for v in window if math.isfinite(v)]
    low, high = min(finite, default=0.0), max(finite, default=0.0)
    chars = []
    for value in window:
        if not math.isfinite(value):
            chars.append(NONFINITE_MARK)
        elif high == low:
            chars.append(BARS[3])
        else:
            chars.append(BARS[round(between(value, low, high) * (len(BARS) - 1))])
    return " " * (width - len(window)) + "".join(chars)


def progress_bar(fraction: float | None, width: int) -> str:
    """A left-to-right bar of ``width`` cells in eighths; unknown progress is all ``░``."""
    if fraction is None or not math.isfinite(fraction):
        return "░" * width
    eighths = round(min(1.0, max(0.0, fraction)) * width * 8)
    full, partial = divmod(eighths, 8)
    bar = "█" * full + (_PARTIAL[partial] if partial else "")
    return bar + "░" * (width - len(bar))


StyleKey = int | str
"""What a pure text renderer says about a cell's look, for its widget to turn into a style:
a colour index (a run's colour) or a component-class name ("" for the plain style)."""
KeyedSpans = list[tuple[str, StyleKey]]
"""One line as spans of text with their style keys."""
