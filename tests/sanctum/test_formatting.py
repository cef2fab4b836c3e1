"""One spelling of numbers for the dashboard, the event log panel, check and summary."""

from __future__ import annotations

import json
import math

import pytest

from sanctum.charts import drawing
from sanctum.formatting import (
    NOT_MEASURED,
    dumps,
    format_anomaly,
    format_count,
    format_duration,
    format_value,
    plural,
)

NAN = math.nan
INF = math.inf


@pytest.mark.parametrize(
    ("value", "decimals", "text"),
    [
        (None, 4, NOT_MEASURED),
        (None, None, "not measured"),
        (0.0, 4, "0.0000"),
        (0.04123, 4, "0.0412"),
        (0.04123, 3, "0.041"),
        (1.4e-05, 4, "1.4e-05"),  # a value fixed decimals would show as zero
        (-1.5, 2, "-1.50"),
        (NAN, 4, "NaN"),
        (INF, 3, "+Inf"),
        (-INF, None, "-Inf"),
        (0.0, None, "0"),
        (3e-4, None, "3.00e-04"),
        (0.0123456, None, "0.01235"),
        (1.0, None, "1.000"),
        (123.456, None, "123.5"),
        (-98765.4, None, "-98765"),
        (2.5e7, None, "2.50e+07"),
    ],
)
def test_format_value(value: float | None, decimals: int | None, text: str) -> None:
    assert format_value(value, decimals) == text


def test_format_count_and_duration() -> None:
    assert format_count(1234567) == "1,234,567"
    assert format_count(None) == "—"
    assert format_duration(None) == "--:--"
    assert format_duration(NAN) == "--:--"
    assert format_duration(0.4) == "0:00"
    assert format_duration(75.9) == "1:15"
    assert format_duration(3 * 3600 + 4 * 60 + 5) == "3:04:05"


def test_integers_are_exact_and_tables_may_name_absent() -> None:
    assert format_value(2_000_000) == "2000000"  # a step count, not 2.00e+06
    assert format_value(0, 3) == "0"
    assert format_value(None, absent="-") == "-"
    assert format_value(INF, 2, absent="-") == "+Inf"


def test_anomaly_text_spells_the_value_like_a_metric_row() -> None:
    assert format_anomaly("grad_norm", INF, "skipped") == "grad_norm = +Inf: skipped"
    assert format_anomaly("grad_norm", -INF, "x") == "grad_norm = -Inf: x"
    assert format_anomaly("loss", NAN, "x") == "loss = NaN: x"
    assert format_anomaly("ratio_max", 40.0, "x") == "ratio_max = 40.00: x"
    assert format_anomaly("grad_norm", None, "no value") == "grad_norm: no value"


def test_json_spells_non_finite_as_the_event_log_does() -> None:
    text = dumps({"a": NAN, "b": [INF, (-INF, 1.5)], "c": None})
    assert json.loads(text) == {"a": "NaN", "b": ["Infinity", ["-Infinity", 1.5]], "c": None}
    assert plural(1, "update") == "1 update" and plural(0, "update") == "0 updates"


def test_the_drawing_spells_numbers_with_the_same_functions() -> None:
    assert drawing.format_value is format_value
