"""reduce_update: which minibatches each field is reduced over, and non-finite values."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
import torch

from ppo.core.gradients import GradNorms
from ppo.core.losses import LossBreakdown, SurrogateStats
from ppo.rollout.buffer import Batch
from ppo.update.stats import MinibatchStats, RolloutStats, UpdateStats, reduce_update

COLUMNS = [f.name for f in fields(MinibatchStats)]

FLAT = torch.zeros(4)


def flat_batch() -> Batch:
    return Batch(obs=FLAT, actions=FLAT, logp=FLAT, values=FLAT, returns=FLAT, advantages=FLAT)


def rows(**columns: list[float]) -> torch.Tensor:
    """Rows of 1.0 except the given columns."""
    n = len(next(iter(columns.values())))
    out = torch.ones(n, len(COLUMNS))
    for name, values in columns.items():
        out[:, list(COLUMNS).index(name)] = torch.tensor(values)
    return out


def test_grad_norm_covers_skipped_steps_so_nan_reaches_the_payload() -> None:
    table = rows(grad_norm=[1.0, math.nan, 3.0], total_loss=[2.0, 5.0, 4.0])
    out = reduce_update(table, [0, 2], range(3), RolloutStats.measure(flat_batch()), None)
    assert math.isnan(out.grad_norm) and math.isnan(out.grad_norm_max)
    assert out.total_loss == 3.0  # losses: applied minibatches only


def test_every_step_skipped_still_reports_the_nonfinite_grad_norm() -> None:
    table = rows(grad_norm=[math.inf, math.inf])
    out = reduce_update(table, [], range(2), RolloutStats.measure(flat_batch()), None)
    assert out.grad_norm == math.inf and out.grad_norm_max == math.inf
    assert out.total_loss is None and out.policy_loss is None  # nothing applied


def test_finite_grad_norms_mean_and_max_over_evaluated_minibatches() -> None:
    table = rows(grad_norm=[1.0, 2.0, 6.0])
    out = reduce_update(table, [0, 1], range(len(table)), RolloutStats.measure(flat_batch()), None)
    assert (out.grad_norm, out.grad_norm_max) == (3.0, 6.0)


def test_opposite_infinities_average_to_nan_instead_of_raising() -> None:
    table = rows(policy_loss=[math.inf, -math.inf], ratio_mean=[math.inf, 1.0])
    out = reduce_update(table, [0, 1], range(len(table)), RolloutStats.measure(flat_batch()), None)
    assert math.isnan(out.policy_loss) and out.ratio_mean == math.inf


def rollout_batch(returns: np.ndarray, values: np.ndarray, advantages: np.ndarray) -> Batch:
    t = {k: torch.from_numpy(v) for k, v in (("r", returns), ("v", values), ("a", advantages))}
    n = len(returns)
    return Batch(
        obs=torch.zeros(n, 1),
        actions=torch.zeros(n),
        logp=torch.zeros(n),
        values=t["v"],
        returns=t["r"],
        advantages=t["a"],
    )


def before_stats(batch: Batch) -> UpdateStats:
    return reduce_update(rows(grad_norm=[1.0]), [0], [0], RolloutStats.measure(batch), None)


def test_rollout_statistics_match_numpy_by_hand() -> None:
    rng = np.random.default_rng(7)
    returns, values, adv = (rng.normal(size=50).astype(np.float32) for _ in range(3))
    out = before_stats(rollout_batch(returns, values, adv))
    r, v, a = (x.astype(np.float64) for x in (returns, values, adv))
    # 1 - Var(R - V) / Var(R), population variances (DESIGN.md section 4)
    expected_ev = 1.0 - np.mean((r - v - np.mean(r - v)) ** 2) / np.mean((r - np.mean(r)) ** 2)
    assert out.rollout.explained_variance == pytest.approx(expected_ev, rel=1e-12, abs=0)
    assert out.rollout.advantage_mean == pytest.approx(np.mean(a), rel=1e-12, abs=0)
    assert out.rollout.advantage_std == pytest.approx(np.std(a, ddof=1), rel=1e-12, abs=0)
    assert out.rollout.return_mean == pytest.approx(np.mean(r), rel=1e-12, abs=0)
    assert out.rollout.value_mean == pytest.approx(np.mean(v), rel=1e-12, abs=0)
    assert out.rollout.return_std == pytest.approx(np.std(r), rel=1e-12, abs=0)


def test_explained_variance_exact_cases_and_undefined_when_returns_are_flat() -> None:
    returns = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    zeros = np.zeros(4, dtype=np.float32)
    perfect = before_stats(rollout_batch(returns, returns.copy(), zeros))
    assert perfect.rollout.explained_variance == 1.0
    constant = before_stats(rollout_batch(returns, np.full(4, 2.5, dtype=np.float32), zeros))
    assert constant.rollout.explained_variance == 0.0
    flat = before_stats(rollout_batch(np.full(4, 7.0, dtype=np.float32), returns, zeros))
    assert flat.rollout.explained_variance is None  # undefined, not "perfect" and not 0


SURROGATE = (
    "clip_fraction",
    "clip_fraction_lower",
    "clip_fraction_low",
    "clip_fraction_high",
    "ratio_mean",
    "ratio_min",
    "ratio_max",
    "ratio_std",
)
BREAKDOWN = (
    "policy_loss",
    "value_loss",
    "entropy",
    "entropy_penalty",
    "approx_kl",
    "kl_penalty",
    "ref_kl",
    "ref_kl_loss",
    "total_loss",
)


def test_row_puts_each_measurement_in_the_column_of_its_name() -> None:
    value = {name: float(i + 1) for i, name in enumerate(COLUMNS)}  # all distinct
    t = {name: torch.tensor(v) for name, v in value.items()}
    breakdown = LossBreakdown(
        **{f: t[f] for f in BREAKDOWN},
        nonfinite_ratios=t["nonfinite_ratios"],
        surrogate=SurrogateStats(**{f: t[f] for f in SURROGATE}),
    )
    norms = GradNorms(
        total=t["grad_norm"],
        groups={"actor": t["grad_norm_actor"], "critic": t["grad_norm_critic"]},
        scale=t["grad_clip_scale"],
    )
    assert MinibatchStats.measure(breakdown, norms).row().tolist() == list(value.values())


def test_approx_kl_is_the_last_epochs_mean_and_its_max_covers_every_minibatch() -> None:
    """SB3's definition: epoch 0's near-zero KLs must not dilute the number judged."""
    table = rows(approx_kl=[0.0, 0.01, 0.02, 0.04, 0.03])  # 2 epochs of 2, a 3rd started
    out = reduce_update(table, [0, 1, 2, 3, 4], [4], RolloutStats.measure(flat_batch()), None)
    assert out.approx_kl == pytest.approx(0.03)
    assert out.approx_kl_max == pytest.approx(0.04)
    out = reduce_update(table, [0, 1, 2, 3], [2, 3], RolloutStats.measure(flat_batch()), None)
    assert out.approx_kl == pytest.approx(0.03)
