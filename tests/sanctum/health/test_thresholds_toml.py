"""Thresholds files: TOML overrides of the table, and errors that name file, table and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from sanctum.health.rule import Rule, ThresholdsError
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.health.thresholds_toml import load_thresholds, resolve_thresholds


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.toml"
    path.write_text(text, encoding="utf-8")
    return path


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


def test_spec_names_the_shipped_preset_unless_a_file_of_that_name_is_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    preset = resolve_thresholds(Path("spec"))
    assert preset.name == "spec.toml" and preset.is_file()
    rule = load_thresholds(Path("spec")).rule("approx_kl")
    assert rule is not None and (rule.statistic, rule.per, rule.warning) == ("value", None, 0.015)
    (tmp_path / "spec").write_text("[approx_kl]\nwarning = 0.5\n", encoding="utf-8")
    assert resolve_thresholds(Path("spec")) == Path("spec")  # the user's own file wins
    mine = load_thresholds(Path("spec")).rule("approx_kl")
    assert mine is not None and mine.warning == 0.5
    assert resolve_thresholds(Path("other")) == Path("other")  # not a preset: as given
