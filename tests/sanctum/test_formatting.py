"""One spelling of numbers for the dashboard, the event log panel, check and summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sanctum.charts import drawing
from sanctum.formatting import (
    NOT_MEASURED,
    dumps,
    format_anomaly,
    format_count,
    format_duration,
    format_kl,
    format_range,
    format_ratio,
    format_value,
    plural,
    steps_count,
    steps_rate,
)
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.board_feed import RunFollower
from sanctum.reports.once import read_snapshot
from sanctum.text.panels import kl_text, metric_row
from sanctum.text.run_table import RUN_COLUMNS, layout, run_line
from tests.sanctum.logs import RunLog

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
        (0.99996, None, "1.000"),  # rounded up to the next decade: still 4 digits
    ],
)
def test_format_value(value: float | None, decimals: int | None, text: str) -> None:
    assert format_value(value, decimals) == text


@pytest.mark.parametrize(
    ("value", "text"), [(0.0412, "0.0412"), (0.0011, "0.0011"), (6e-4, "6.0e-04"), (0.0, "0.0000")]
)
def test_a_kl_too_small_for_two_fixed_digits_reads_in_significant_digits(
    value: float, text: str
) -> None:
    assert format_kl(value) == text


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


def test_one_kl_reads_the_same_in_the_banner_the_panel_and_the_run_table(tmp_path: Path) -> None:
    """KL 0.00118 was 0.001 in the banner, 0.0012 in the run table and 0.001180 in the
    panel: every KL figure now goes through ``format_kl`` at the KL rule's decimals."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(3):
        log.update(u, approx_kl=0.00118, kl_final=0.00118, approx_kl_max=0.00118)
    log.finish()
    log.close()
    snapshot = read_snapshot(path, DEFAULT_THRESHOLDS)
    assert format_kl(0.00118) == "0.0012"
    assert kl_text(snapshot).startswith("KL 0.0012")
    for name in ("kl_final", "approx_kl_max"):
        assert metric_row(snapshot, name).value == "0.0012"
    follower = RunFollower(path, "run", DEFAULT_THRESHOLDS)
    assert follower.read()[0]
    row = follower.row(log.now)
    cells = "".join(text for text, _ in run_line(layout(RUN_COLUMNS, 116), row, 0))
    assert cells.rstrip().endswith("0.0012")
    assert format_kl(1.4e-05) == "1.4e-05"  # never a zero for a KL that is not


UNRULED_SHOWN = ("approx_kl_max", "kl_final", "policy_loss", "learning_rate")
"""Metrics no rule judges, shown by value in summary, diff, ``--once`` and the chart list."""


@pytest.mark.parametrize("value", [3.67e-05, 6e-4, 0.00391, 0.99996, 1.0, 123.456])
@pytest.mark.parametrize("metric", UNRULED_SHOWN)
def test_one_value_of_a_metric_reads_the_same_in_every_view(
    tmp_path: Path, metric: str, value: float
) -> None:
    """The same final value of a metric: one string in ``summary``'s metric table, ``diff``'s
    other metrics, ``--once`` and the chart screen's metric list (real logs, real reports)."""
    from sanctum.reports.diff import build_diff
    from sanctum.reports.diff_report import format_text as diff_text
    from sanctum.reports.once import once_text
    from sanctum.reports.summary import build_summary
    from sanctum.reports.summary import format_text as summary_text
    from sanctum.text.chart_words import choice_text

    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path in paths:
        log = RunLog(path)
        log.start()
        for u in range(6):
            log.update(u, **{metric: value})
        log.finish()
        log.close()

    def cells(text: str, after: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(after))
        row = next(line for line in lines[start:] if line.split()[:1] == [metric])
        return row.split()

    summary = build_summary(paths[0], DEFAULT_THRESHOLDS)
    shown = {
        "summary": cells(summary_text(summary), "metrics")[1],
        "diff": cells(diff_text(build_diff(*paths, DEFAULT_THRESHOLDS)), "other metrics")[1],
    }
    snapshot = read_snapshot(paths[0], DEFAULT_THRESHOLDS)
    shown["--once"] = cells(once_text(snapshot, paths[0]), "")[1]
    shown["chart list"] = choice_text(snapshot, metric).split()[1]
    assert len(set(shown.values())) == 1, shown


def test_a_count_of_steps_says_what_it_counts() -> None:
    assert (steps_count(1, None), steps_count(6144, None)) == ("1 step", "6144 steps")
    assert steps_count("12,345/100,000", None) == "12,345/100,000 steps"
    assert steps_count(1, "tokens") == "1 tokens"  # a declared unit is a plural noun
    assert steps_count(7, "a\x1b[2J") == "7 a\\x1b[2J"
    assert (steps_rate("2,345", None, short=True), steps_rate("2,345", None)) == (
        "2,345 sps",
        "2,345 steps/s",
    )
    assert steps_rate("812", "tokens", short=True) == "812 tokens/s"


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [
        (37.0, 163.0, "37.0…163.0"),  # one precision: 4 digits of the larger end
        (0.375, 1.0, "0.375…1.000"),
        (-12.5, 3.25, "-12.50…3.25"),
        (500.0, 500.0, "500.0…500.0"),
        (None, 2.0, "not measured…2.000"),
        (-math.inf, 3.0, "-Inf…3.000"),
        (1.0, math.nan, "1.000…NaN"),  # a non-finite end: each end spelled on its own
        (math.nan, 1.0, "NaN…1.000"),
        (1.0, 25_000.0, "1…25000"),
        (1.0, 2.5e7, "1.000…2.50e+07"),  # past the fixed form: each end on its own
    ],
)
def test_a_range_is_written_at_one_precision(
    low: float | None, high: float | None, text: str
) -> None:
    assert format_range(low, high) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.6, "1.60"), (0.0086, "0.00860"), (1.8e-13, "1.8e-13"), (0.0, "0"), (50.0, "50.0")],
)
def test_a_ratio_keeps_one_form_as_it_moves(value: float, text: str) -> None:
    assert format_ratio(value) == text
