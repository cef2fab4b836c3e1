"""One PPO update in progress: what is in force, the statistics table, and the decisions.

The classic agent and the token-level updater fill an :class:`UpdateState` minibatch by
minibatch, through the same calls: :meth:`UpdateState.record` puts a minibatch's
measurements in its row, :meth:`UpdateState.settle` decides its step (stop the update
before it, skip it, or take it). Its :class:`InForce` and :meth:`UpdateState.decisions` are
what the payload records of it, and :func:`anomalies` what the trainer reports beside.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import torch
from torch import Tensor

from ppo.config import EarlyStopScope
from ppo.update.stats import WIDTH, MinibatchStats
from telemetry.events import AnomalyPayload, EarlyStop, PPOUpdatePayload


def exceeds(kl: float, max_kl: float | None) -> bool:
    """Whether ``kl`` breaks the threshold; a non-finite KL always does."""
    return max_kl is not None and not kl <= max_kl


def early_stop(
    epoch: int, minibatch: int, kl: float, threshold: float, scope: EarlyStopScope
) -> EarlyStop:
    """The stop record; minibatch scope stops before its step, epoch scope after them."""
    return EarlyStop(
        epoch=epoch,
        minibatch=minibatch,
        kl=kl,
        threshold=threshold,
        scope=scope,
        applied=scope == "epoch",
    )


@dataclass(frozen=True)
class SkippedStep:
    """An optimizer step not taken because the loss or gradient was not finite."""

    epoch: int
    minibatch: int
    metric: str
    value: float


class _InForceAlways(TypedDict):
    update: int
    global_step: int
    learning_rate: float
    entropy_coef: float


class InForce(_InForceAlways, total=False):
    """What an update has in force from its start: the payload records it as it is."""

    kl_coef: float
    """The KL penalty's coefficient (absent: the loss has no KL penalty)."""


class StopFields(TypedDict):
    """The payload's record of an early stop: whether there was one, its reason and itself."""

    early_stopped: bool
    early_stop_reason: str | None
    early_stop: EarlyStop | None


def stop_fields(stop: EarlyStop | None) -> StopFields:
    """How the payload records ``stop`` (None: the update ran to its end)."""
    return StopFields(
        early_stopped=stop is not None,
        early_stop_reason=None if stop is None else stop.describe(),
        early_stop=stop,
    )


class Decisions(StopFields):
    """What an update did: the payload's fields that are neither measurements nor in force."""

    epochs_completed: int
    minibatches_completed: int
    minibatches_planned: int
    skipped_steps: int


@dataclass
class UpdateState:
    """One update in progress: what is in force, the statistics tensor, and the decisions.

    ``stats`` stays on the device; everything else is host-side bookkeeping.
    """

    in_force: InForce
    stats: Tensor
    per_epoch: int
    """Minibatches per epoch: minibatch m of epoch e is row e * per_epoch + m."""
    evaluated: int = 0
    applied_rows: list[int] = field(default_factory=list)
    epochs_started: int = 0
    skipped: list[SkippedStep] = field(default_factory=list)
    stop: EarlyStop | None = None
    planned: int = 0

    @classmethod
    def start(
        cls, in_force: InForce, epochs: int, per_epoch: int, device: torch.device
    ) -> UpdateState:
        """An update of ``epochs`` x ``per_epoch`` minibatches, its table all NaN on
        ``device``."""
        planned = epochs * per_epoch
        table = torch.full((planned, WIDTH), math.nan, device=device)
        return cls(in_force, table, per_epoch, planned=planned)

    def record(self, epoch: int, minibatch: int, measured: MinibatchStats[Tensor]) -> None:
        """A minibatch's measurements, in its row of the table (still on the device)."""
        row = epoch * self.per_epoch + minibatch
        self.stats[row] = measured.row()
        self.evaluated = row + 1

    def settle(
        self, epoch: int, minibatch: int, decide: Sequence[float], max_kl: float | None
    ) -> bool:
        """What becomes of a recorded minibatch's step, from ``decide`` (its KL, loss and
        gradient norm, read from the device at once): the update stops before it when its
        KL is past ``max_kl`` (None: no check before a step), the step is skipped when its
        loss or norm is not finite, else it is taken: True, and the minibatch is applied."""
        kl, loss, norm = decide
        if exceeds(kl, max_kl):
            assert max_kl is not None  # exceeds() is never true without a threshold
            self.stop = early_stop(epoch, minibatch, kl, max_kl, "minibatch")
            return False
        if not (math.isfinite(loss) and math.isfinite(norm)):
            bad = ("total_loss", loss) if not math.isfinite(loss) else ("grad_norm", norm)
            self.skipped.append(SkippedStep(epoch, minibatch, *bad))
            return False
        self.applied_rows.append(epoch * self.per_epoch + minibatch)
        return True

    @property
    def last_epoch(self) -> range:
        """The rows evaluated in the last epoch that started."""
        return range((self.epochs_started - 1) * self.per_epoch, self.evaluated)

    def decisions(self) -> Decisions:
        """The payload's fields that record what this update did."""
        return Decisions(
            epochs_completed=self.epochs_started,
            minibatches_completed=len(self.applied_rows),
            minibatches_planned=self.planned,
            skipped_steps=len(self.skipped),
            **stop_fields(self.stop),
        )


def anomalies(payload: PPOUpdatePayload, state: UpdateState) -> tuple[AnomalyPayload, ...]:
    """What the trainer reports beside the payload: skipped steps, replaced ratios."""
    found: list[AnomalyPayload] = []
    update, global_step = state.in_force["update"], state.in_force["global_step"]
    if state.skipped:
        first = state.skipped[0]
        found.append(
            AnomalyPayload(
                severity="critical",
                metric=first.metric,
                value=first.value,
                message=(
                    f"{len(state.skipped)} optimizer step(s) skipped: non-finite "
                    f"{first.metric} {first.value} first at epoch {first.epoch} "
                    f"minibatch {first.minibatch}"
                ),
                update=update,
                global_step=global_step,
            )
        )
    if payload.nonfinite_ratios:
        found.append(
            AnomalyPayload(
                severity="warning",
                metric="nonfinite_ratios",
                value=float(payload.nonfinite_ratios),
                message=(
                    f"{payload.nonfinite_ratios} non-finite probability ratio(s) replaced by "
                    "the guard (log-ratio NaN -> 0, +-inf -> clamp)"
                ),
                update=update,
                global_step=global_step,
            )
        )
    return tuple(found)
