"""Log-axis labels: a threshold is spelled as the decades beside it are."""

from __future__ import annotations

import pytest

from sanctum.charts.scale import decade_label, log_label


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
