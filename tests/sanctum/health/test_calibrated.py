"""The calibrated table: the defaults docs/design.md lists."""

from __future__ import annotations

from sanctum.health.thresholds import DEFAULT_THRESHOLDS


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
