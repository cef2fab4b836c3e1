"""A run that stops itself when its health goes bad: the one judge inside a trainer.

:class:`HaltGate` is sanctum's :class:`telemetry.halting.Halter` (exported as
``sanctum.HaltGate``): a trainer takes it as any halter and subscribes it to its
recorder's bus. The gate folds every event into its own
:class:`~sanctum.model.aggregator.SanctumAggregator`, the fold every view and ``sanctum
check`` read, and after each update or anomaly asks the verdict's rows what ``sanctum check
--allow-unfinished --fail-on LEVEL`` would say of the run so far. Once a row fails,
:attr:`HaltGate.fired` names it and stays set: the trainer stops at its next chance, records
:meth:`HaltGate.anomaly` and finishes the run with :data:`HALT_STATUS` and
:attr:`HaltGate.reason`. So a halted run is judged by ``check`` as what it is: failed,
naming the rule that stopped it. There is no second set of rules to drift from the gate's.
A new ``run_started`` begins a new fold, so one gate judges each run of a trainer that
trains twice.

Cheap enough to run per update: the rows are tallies the aggregator already holds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.checks import judge_rows
from sanctum.model.verdict import CheckRow
from telemetry.events import Anomaly, AnomalyPayload, Event, PPOUpdate, RunStarted, RunStatus
from telemetry.halting import HALT_LEVELS, HALT_PREFIX

HALT_STATUS: Final[RunStatus] = "failed"
"""How a halted run finishes: it failed its health (``check`` fails it whatever else it
says); the reason names the rule."""


def halt_level(value: str | Level) -> Level:
    """``critical`` or ``warning`` as a Level; ValueError naming the choices otherwise."""
    if isinstance(value, Level) and value.value in HALT_LEVELS:
        return value
    if isinstance(value, str) and value in HALT_LEVELS:
        return Level(value)
    raise ValueError(f"halt_on must be one of {', '.join(HALT_LEVELS)} or None, got {value!r}")


class HaltGate:
    """Judges a run as it is recorded; :attr:`fired` once its verdict reaches ``halt_on``.

    Use it as a sink of the recorder's bus, subscribed before ``run_started`` is written:
    ``recorder.bus.subscribe(gate, name=gate.name)``. ``thresholds``: the rules (a
    :class:`Thresholds`, the path of a thresholds file, or None for the shipped ones); a
    bad level or file raises ValueError (ThresholdsError) naming it.
    """

    def __init__(
        self,
        thresholds: Thresholds | str | os.PathLike[str] | None = None,
        halt_on: str | Level = Level.CRITICAL,
    ) -> None:
        self.halt_on = halt_level(halt_on)
        if not isinstance(thresholds, Thresholds):
            thresholds = load_thresholds(None if thresholds is None else Path(thresholds))
        self.thresholds = thresholds
        self.aggregator = SanctumAggregator(thresholds, fail_on=self.halt_on)
        self.rows: tuple[CheckRow, ...] = ()
        """The verdict's rows that failed when the gate fired (empty until then)."""
        self.update: int | None = None
        """The latest update folded when the gate fired."""

    name = "halt"
    """The gate's name as a bus sink."""
    status: RunStatus = HALT_STATUS
    """How a halted run finishes (:data:`HALT_STATUS`)."""

    @property
    def fired(self) -> tuple[str, ...]:
        """What stopped the run, as the verdict names it (``RefKL``, ``non-finite``...);
        empty while the run may go on."""
        return tuple(row.verdict_name or row.label for row in self.rows)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):  # a run begins: judged on its own
            self.aggregator = SanctumAggregator(self.thresholds, fail_on=self.halt_on)
            self.rows, self.update = (), None
        self.aggregator.handle(event)
        if self.rows or not isinstance(event, PPOUpdate | Anomaly):
            return
        rows = judge_rows(self.aggregator, self.halt_on, allow_unfinished=True, live=True)
        failed = tuple(row for row in rows if not row.passed)
        if failed:
            self.rows = failed
            self.update = event.payload.update

    @property
    def reason(self) -> str | None:
        """``halted: RefKL critical (RefKL reached critical in 2 updates, first at update
        3; ...)``: what ``run_finished.reason`` says of a halted run; None until fired."""
        if not self.rows:
            return None
        first = self.rows[0]
        names = ", ".join(self.fired)
        return f"{HALT_PREFIX}{names} {self.halt_on.value} ({first.message})"

    def anomaly(self, global_step: int | None = None) -> AnomalyPayload:
        """The record of the stop: a critical anomaly on the first failing row's metric."""
        if not self.rows:
            raise RuntimeError("HaltGate.anomaly() before the gate fired")
        first = self.rows[0]
        return AnomalyPayload(
            severity="critical",
            metric=first.name,
            value=first.worst,
            message=f"{self.reason}; the trainer stops the run",
            update=self.update,
            global_step=global_step,
        )
