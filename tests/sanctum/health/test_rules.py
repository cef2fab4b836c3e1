"""The one rule table: DESIGN defaults, TOML overrides, and errors that name file/table/key."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from sanctum.health.rules import (
    DEFAULT_THRESHOLDS,
    Rule,
    Thresholds,
    ThresholdsError,
    load_thresholds,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_the_calibrated_table() -> None:
    """The table bench/health_calibration.py measured (README, health section)."""
    table = {
        r.metric: (r.label, r.direction, r.warning, r.critical, r.warmup_updates)
        for r in DEFAULT_THRESHOLDS.rules
    }
    assert table == {
        "approx_kl": ("KL", "above", 5.0, 20.0, 0),
        "clip_fraction": ("Clip", "above", 0.5, None, 0),
        "grad_norm": ("Grad", "above", 100.0, 1000.0, 0),
        "value_loss": ("Value loss", "above", 100.0, 1000.0, 0),
        "explained_variance": ("EV", "below", -0.5, None, 10),
        "entropy_normalized": ("Entropy", "below", 0.1, 0.01, 0),
        "entropy": ("Entropy shift", "above", 2.0, 4.0, 0),
        "ref_kl": ("RefKL", "above", 0.6, 1.0, 0),
        "completion_truncated_frac": ("Length", "above", 0.25, 0.5, 0),
    }
    how = {
        r.metric: (r.statistic, r.window, r.persist, r.far, r.min_return_spread)
        for r in DEFAULT_THRESHOLDS.rules
    }
    assert how == {
        "approx_kl": ("median", 5, 1, None, None),
        "clip_fraction": ("median", 10, 1, None, None),
        "grad_norm": ("jump", 20, 2, None, None),
        "explained_variance": ("median", 10, 3, None, 0.05),
        "value_loss": ("high", 5, 1, None, None),
        "entropy_normalized": ("jump", 20, 2, None, None),
        "entropy": ("shift", 20, 2, None, None),
        "ref_kl": ("value", 1, 2, 3.0, None),
        "completion_truncated_frac": ("value", 1, 3, None, None),
    }
    per = {r.metric: (r.per, r.per_floor) for r in DEFAULT_THRESHOLDS.rules if r.per is not None}
    assert per == {"approx_kl": ("clip_fraction", 0.01)}
    assert [r.metric for r in DEFAULT_THRESHOLDS.rules if r.only_when_measured] == [
        "ref_kl",
        "completion_truncated_frac",
    ]
    assert (DEFAULT_THRESHOLDS.stale_seconds, DEFAULT_THRESHOLDS.stall_seconds) == (10.0, 120.0)
    assert DEFAULT_THRESHOLDS.stall_pace == 10.0
    assert DEFAULT_THRESHOLDS.rule("approx_kl").decimals == 4  # type: ignore[union-attr]
    assert DEFAULT_THRESHOLDS.rule("advantage_std") is None
    assert DEFAULT_THRESHOLDS.metrics == (
        "approx_kl",
        "clip_fraction",
        "grad_norm",
        "explained_variance",
        "value_loss",
        "entropy_normalized",
        "entropy",
        "ref_kl",
        "completion_truncated_frac",
    )


def test_no_file_gives_the_defaults() -> None:
    assert load_thresholds(None) is DEFAULT_THRESHOLDS


def test_override_changes_only_what_the_file_names(tmp_path: Path) -> None:
    path = write(tmp_path, "stale_seconds = 30\n[approx_kl]\nwarning = 0.01\ncritical = 0.02\n")
    loaded = load_thresholds(path)
    kl = loaded.rule("approx_kl")
    assert kl is not None
    assert (kl.warning, kl.critical, kl.label, kl.decimals) == (0.01, 0.02, "KL", 4)
    assert loaded.rule("grad_norm") == DEFAULT_THRESHOLDS.rule("grad_norm")
    assert loaded.stale_seconds == 30
    assert loaded.metrics == DEFAULT_THRESHOLDS.metrics


def test_a_rule_that_only_warns(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text("[clip_fraction]\nwarning = 0.5\ncritical = false\n")
    rule = load_thresholds(path).rule("clip_fraction")
    assert rule is not None and rule.critical is None
    assert rule.describe().endswith("> 0.5 (warns only)") or "(warns only)" in rule.describe()
    path.write_text("[approx_kl]\ncritical = false\nfar = 2.0\n")
    with pytest.raises(ThresholdsError, match=r"\[approx_kl\] far: needs a critical line"):
        load_thresholds(path)
    path.write_text("[approx_kl]\ncritical = true\n")
    with pytest.raises(ThresholdsError, match=r"critical: must be a finite number \(or false"):
        load_thresholds(path)


def test_a_rule_per_another_metric(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[clip_fraction]\nper = "approx_kl"\nper_floor = 0.001\n')
    rule = load_thresholds(path).rule("clip_fraction")
    assert rule is not None and (rule.per, rule.per_floor) == ("approx_kl", 0.001)
    for text, key in (
        ('per = "bogus"', "per"),
        ('per = "clip_fraction"', "per"),
        ("per_floor = 0", "per_floor"),
    ):
        path.write_text(f"[clip_fraction]\n{text}\n")
        with pytest.raises(ThresholdsError, match=rf"\[clip_fraction\] {key}: "):
            load_thresholds(path)


def test_a_file_turns_per_and_far_off_with_false(tmp_path: Path) -> None:
    """A KL rule judged in nats again, as before the per-clip rule."""
    path = tmp_path / "t.toml"
    path.write_text(
        '[approx_kl]\nper = false\nstatistic = "value"\nwindow = 1\nwarning = 0.04\n'
        "critical = 0.1\npersist = 2\n[ref_kl]\nfar = false\n"
    )
    loaded = load_thresholds(path)
    kl, ref = loaded.rule("approx_kl"), loaded.rule("ref_kl")
    assert kl is not None and kl.per is None and kl.in_metric_units
    assert ref is not None and ref.far is None


def test_integer_thresholds_are_accepted(tmp_path: Path) -> None:
    loaded = load_thresholds(write(tmp_path, "[grad_norm]\nwarning = 2\ncritical = 4\n"))
    rule = loaded.rule("grad_norm")
    assert rule is not None
    assert (rule.warning, rule.critical) == (2, 4)


def test_a_file_can_add_a_rule_for_another_metric(tmp_path: Path) -> None:
    text = '[advantage_std]\ndirection = "below"\nwarning = 0.1\ncritical = 0.01\nlabel = "Adv"\n'
    loaded = load_thresholds(write(tmp_path, text))
    assert loaded.metrics[-1] == "advantage_std"
    assert loaded.rule("advantage_std") == Rule("advantage_std", "Adv", "below", 0.1, 0.01)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[approx_kll]\nwarning = 0.01\n", ["[approx_kll]", "unknown metric"]),
        ("[approx_kl]\nwarn = 0.01\n", ["[approx_kl] warn", "unknown key"]),
        ('[approx_kl]\nwarning = "high"\n', ["[approx_kl] warning", "finite number", "'high'"]),
        ("[approx_kl]\nwarning = true\n", ["[approx_kl] warning", "finite number", "True"]),
        ("[approx_kl]\ncritical = nan\n", ["[approx_kl] critical", "finite number", "nan"]),
        (
            "[approx_kl]\nwarning = 0.2\ncritical = 0.1\n",
            ["[approx_kl] warning", "0.2", "above critical 0.1"],
        ),
        ("[explained_variance]\ncritical = 0.5\n", ["[explained_variance] warning", "below"]),
        ("[explained_variance]\nwarmup_updates = -1\n", ["[explained_variance] warmup_updates"]),
        ("[approx_kl]\ndecimals = 1.5\n", ["[approx_kl] decimals"]),
        ('[approx_kl]\ndirection = "up"\n', ["[approx_kl] direction", "'up'"]),
        (
            "[advantage_std]\nwarning = 0.1\ncritical = 0.0\n",
            ["[advantage_std] direction", "new rule"],
        ),
        ("approx_kl = 0.01\n", ["approx_kl", "must be a table"]),
        ("colour = 1\n", ["colour", "unknown key"]),
        ("stale_seconds = 0\n", ["stale_seconds", "> 0"]),
        ("stall_seconds = -5\n", ["stall_seconds", "> 0"]),
        ("stall_pace = 0\n", ["stall_pace", "> 0"]),
        ('[approx_kl]\nstatistic = "mean"\n', ["[approx_kl] statistic", "value, median, jump"]),
        ("[grad_norm]\nwindow = 1\n", ["[grad_norm] window", "at least 2"]),
        ("[approx_kl]\npersist = 0\n", ["[approx_kl] persist", ">= 1"]),
        (
            "[approx_kl]\nwarning = 0.04\ncritical = 0.1\nfar = 0.05\n",
            ["[approx_kl] far", "past critical 0.1"],
        ),
        ("[explained_variance]\nmin_return_spread = -1\n", ["min_return_spread", ">= 0"]),
        ("[approx_kl\nwarning = 1\n", ["not valid TOML"]),
    ],
)
def test_bad_file_names_file_table_and_key(tmp_path: Path, text: str, names: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    for name in names:
        assert name in message


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ThresholdsError, match=r"nope\.toml: no such thresholds file"):
        load_thresholds(path)


def test_binary_file_is_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe\x00[")
    with pytest.raises(ThresholdsError, match="thresholds file is not UTF-8 text"):
        load_thresholds(path)


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
