"""Which way a metric is going: the least-squares slope and the direction the screen shows.

Pure maths over plain sequences, computed once in the headless core (the aggregator puts
each metric's direction in its snapshot); widgets only draw the arrow for it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Trend = Literal["up", "down", "flat", "unknown"]
"""``unknown``: fewer than two finite values, so no direction to show."""


def least_squares_slope(xs: Sequence[float], ys: Sequence[float | None]) -> float | None:
    """Slope of the least-squares line through the finite (x, y) pairs; None if < 2 points."""
    points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and math.isfinite(y)]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def trend_of(values: Sequence[float | None], spread_share: float = 0.5) -> Trend:
    """Direction of the least-squares line through the finite values (oldest first).

    The line's rise over the window must cover at least ``spread_share`` of the values'
    range, so a noisy series reads flat while a steady climb reads up however slowly it
    climbs; a rise below 1e-9 of the values' magnitude is float jitter and reads flat.
    Not-measured and non-finite values are skipped: their level, not their direction, is
    what matters.
    """
    finite = [v for v in values if v is not None and math.isfinite(v)]
    slope = least_squares_slope(range(len(finite)), finite)
    if slope is None:
        return "unknown"
    rise = slope * (len(finite) - 1)
    spread = max(finite) - min(finite)
    magnitude = max(abs(v) for v in finite)
    if spread == 0 or abs(rise) < spread_share * spread or abs(rise) <= 1e-9 * magnitude:
        return "flat"
    return "up" if rise > 0 else "down"
