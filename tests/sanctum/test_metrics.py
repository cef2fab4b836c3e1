"""The metric list's names: each fits the health panel's name column, whole or short."""

from __future__ import annotations

from sanctum.metrics import PPO_METRICS, SHORT_NAMES, short_name
from sanctum.text.panels import NAME_CELLS


def test_every_metric_name_fits_the_name_column_whole_or_by_its_short_form() -> None:
    too_long = [m for m in PPO_METRICS if len(short_name(m)) > NAME_CELLS]
    assert too_long == []
    assert set(SHORT_NAMES) <= set(PPO_METRICS)  # no short form for a metric that is gone
    assert len(set(map(short_name, PPO_METRICS))) == len(PPO_METRICS)  # none shared
