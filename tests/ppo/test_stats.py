"""reduce_update: which minibatches each field is reduced over, and non-finite values."""

from __future__ import annotations

import math

import torch

from ppo.buffer import Batch
from ppo.stats import COLUMNS, BatchStats, reduce_update

FLAT = torch.zeros(4)


def flat_batch() -> Batch:
    return Batch(obs=FLAT, actions=FLAT, logp=FLAT, values=FLAT, returns=FLAT, advantages=FLAT)


def rows(**columns: list[float]) -> torch.Tensor:
    """Rows of 1.0 except the given columns."""
    n = len(next(iter(columns.values())))
    out = torch.ones(n, len(COLUMNS))
    for name, values in columns.items():
        out[:, COLUMNS.index(name)] = torch.tensor(values)
    return out


def test_grad_norm_covers_skipped_steps_so_nan_reaches_the_payload() -> None:
    table = rows(grad_norm=[1.0, math.nan, 3.0], total_loss=[2.0, 5.0, 4.0])
    out = reduce_update(table, [0, 2], BatchStats.of(flat_batch()), None)
    assert math.isnan(out["grad_norm"]) and math.isnan(out["grad_norm_max"])
    assert out["total_loss"] == 3.0  # losses: applied minibatches only


def test_every_step_skipped_still_reports_the_nonfinite_grad_norm() -> None:
    table = rows(grad_norm=[math.inf, math.inf])
    out = reduce_update(table, [], BatchStats.of(flat_batch()), None)
    assert out["grad_norm"] == math.inf and out["grad_norm_max"] == math.inf
    assert out["total_loss"] is None and out["policy_loss"] is None  # nothing applied


def test_finite_grad_norms_mean_and_max_over_evaluated_minibatches() -> None:
    table = rows(grad_norm=[1.0, 2.0, 6.0])
    out = reduce_update(table, [0, 1], BatchStats.of(flat_batch()), None)
    assert (out["grad_norm"], out["grad_norm_max"]) == (3.0, 6.0)


def test_opposite_infinities_average_to_nan_instead_of_raising() -> None:
    table = rows(policy_loss=[math.inf, -math.inf], ratio_mean=[math.inf, 1.0])
    out = reduce_update(table, [0, 1], BatchStats.of(flat_batch()), None)
    assert math.isnan(out["policy_loss"]) and out["ratio_mean"] == math.inf
