"""One PPO update in progress: what is in force, the statistics table, and the decisions.

The agent fills an :class:`UpdateState` minibatch by minibatch; its :class:`InForce` and
:meth:`UpdateState.decisions` are what the payload records of it, and :func:`anomalies`
what the trainer reports beside.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from torch import Tensor

from telemetry.events import AnomalyPayload, EarlyStop, PPOUpdatePayload


@dataclass(frozen=True)
class SkippedStep:
    """An optimizer step not taken because the loss or gradient was not finite."""

    epoch: int
    minibatch: int
    metric: str
    value: float


class InForce(TypedDict):
    """What an update has in force from its start: the payload records it as it is."""

    update: int
    global_step: int
    learning_rate: float
    entropy_coef: float
    kl_coef: float


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
    evaluated: int = 0
    applied_rows: list[int] = field(default_factory=list)
    epochs_started: int = 0
    skipped: list[SkippedStep] = field(default_factory=list)
    stop: EarlyStop | None = None
    planned: int = 0

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
