"""A rule: its checks on itself (in code and from a file), its words and its direction."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from sanctum.health.rule import Rule, ThresholdsError
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.health.thresholds_toml import load_thresholds


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_rule_validation_applies_to_code_too() -> None:
    with pytest.raises(ThresholdsError, match=r"\[approx_kl\] warning"):
        Rule("approx_kl", "KL", "above", 0.5, 0.1)
    with pytest.raises(ThresholdsError, match="unknown metric 'kl'"):
        Rule("kl", "KL", "above", 0.1, 0.5)
    rule = Rule("approx_kl", "KL", "above", 0.03, 0.03)  # equal thresholds: warning never alone
    ev = DEFAULT_THRESHOLDS.rule("explained_variance")
    assert ev is not None
    with pytest.raises(ThresholdsError, match=r"more than one rule for the metric approx_kl$"):
        Thresholds((rule, ev, rule))


def test_describe_states_the_thresholds() -> None:
    ev = Rule(
        "explained_variance",
        "EV",
        "below",
        -0.1,
        -0.5,
        warmup_updates=10,
        statistic="median",
        window=10,
        persist=3,
        min_return_spread=0.05,
    )
    assert ev.describe() == (
        "median of 10 explained_variance < -0.1 / < -0.5, 3 updates in a row, "
        "after 10 updates, when returns vary"
    )
    assert replace(ev, warning=-0.5, critical=None).describe() == (
        "median of 10 explained_variance < -0.5 (warns only), 3 updates in a row, "
        "after 10 updates, when returns vary"
    )
    kl = Rule("approx_kl", "KL", "above", 0.04, 0.1, persist=2, far=0.5)
    assert kl.describe() == "approx_kl > 0.04 / > 0.1, 2 updates in a row (at once past 0.5)"
    per_clip = Rule(
        "approx_kl", "KL", "above", 5.0, 20.0, statistic="median", window=5, per="clip_fraction"
    )
    assert per_clip.describe() == (
        "median of 5 approx_kl / clip_fraction (at least 0.01) > 5 / > 20"
    )
    grad = Rule("grad_norm", "Grad", "above", 100.0, 1000.0, statistic="jump", window=20, persist=2)
    assert grad.describe() == (
        "grad_norm / median of previous 20 > 100x / > 1000x, 2 updates in a row"
    )
    assert Rule("approx_kl", "KL", "above", 0.01, 0.02).describe() == "approx_kl > 0.01 / > 0.02"


def test_a_rule_spells_its_statistic() -> None:
    grad = DEFAULT_THRESHOLDS.rule("grad_norm")
    kl = DEFAULT_THRESHOLDS.rule("approx_kl")
    assert grad is not None and kl is not None
    assert (grad.format(12.34), grad.format(math.nan), grad.format(None, "-")) == (
        "x12.3",
        "NaN",
        "-",
    )
    assert kl.format(0.04123) == "0.0412"


def test_worse_than_reads_the_direction_for_integer_thresholds_and_nan() -> None:
    grad = Rule("grad_norm", "Grad", "above", 5, 10)  # integers, as a TOML file may give
    ev = Rule("explained_variance", "EV", "below", 0.3, 0)
    assert [grad.worse_than(5)(v) for v in (4.9, 5.0, 5.5)] == [False, False, True]
    assert [ev.worse_than(0)(v) for v in (-0.1, 0.0, 0.1)] == [True, False, False]
    assert not grad.is_worse(math.nan, 5) and not ev.is_worse(math.nan, 0)  # NaN: check first
    assert (grad.worst_of([1.0, 7.0, 3.0]), ev.worst_of([0.5, -0.2, 0.9])) == (7.0, -0.2)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("span = 0", r"\[clip_fraction\] span: must be an integer >= 1, got 0"),
        ('rise_with = "nope"', r"\[clip_fraction\] rise_with: must name another ppo_update"),
        ("rise = -1", r"\[clip_fraction\] rise: must be a finite number >= 0, got -1"),
        ('per_required = "yes"', r"\[clip_fraction\] per_required: must be true or false"),
    ],
)
def test_the_keys_that_fit_a_rule_to_a_run_are_checked(
    tmp_path: Path, table: str, message: str
) -> None:
    with pytest.raises(ThresholdsError, match=message):
        load_thresholds(write(tmp_path, f"[clip_fraction]\n{table}\n"))
