"""Log-axis labels: a threshold is spelled as the decades beside it are."""

from __future__ import annotations

import math

import pytest

from sanctum.charts.glyphs import sparkline
from sanctum.charts.overlay import Geometry
from sanctum.charts.scale import decade_label, fit, log_label


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (0.6, "0.6"),
        (1.0, "1"),
        (0.04, "0.04"),
        (1000.0, "1000"),
        (1e-4, "1e-04"),
        (2.5e-6, "2.5e-06"),
    ],
)
def test_a_threshold_on_a_log_axis_is_spelled_as_its_decades_are(value: float, label: str) -> None:
    assert log_label(value) == label


@pytest.mark.parametrize(("value", "label"), [(1000.0, "1000"), (0.001, "0.001"), (3e-5, "1e-05")])
def test_a_decade_is_the_nearest_power_of_ten_in_the_same_spelling(
    value: float, label: str
) -> None:
    assert decade_label(value) == label


# ------------------------------------------------------------------ finite extremes
EXTREMES = [1e308, -1e308, 1.7e308, -1.7e308, 5.0, 0.0]
"""Finite values whose differences are past float's range (1e308 - -1e308 is inf)."""


def test_a_fitted_axis_over_finite_extremes_is_finite_and_holds_them() -> None:
    scale = fit(EXTREMES, [], log=False)
    assert math.isfinite(scale.bottom) and math.isfinite(scale.top)
    assert scale.bottom <= min(EXTREMES) and scale.top >= max(EXTREMES)
    assert all(0.0 <= scale.fraction(v) <= 1.0 for v in EXTREMES)
    assert all(math.isfinite(t) for t in scale.ticks())


def test_sparkline_and_plot_rows_of_finite_extremes() -> None:
    assert sparkline([1e308, -1e308, 0.0, 1.7e308], 4) == "▆▁▄█"
    geometry = Geometry(cols=10, rows=4, x0=0, x1=5, scale=fit(EXTREMES, [], log=False))
    to_y = geometry.pixel_y()
    rows = [to_y(v) for v in EXTREMES]
    assert rows == [geometry.y_of(v) for v in EXTREMES]
    assert rows[2] == geometry.height_px - 1 and rows[3] == 0  # the top and the bottom
    assert to_y(math.inf) == geometry.height_px - 1  # far off the axis: clamped, not raised
