"""Halting a run on its health: what a trainer asks of the judge that stops it.

A trainer that can be halted takes a :class:`Halter`, subscribes it to its recorder's bus
before ``run_started`` is written (``recorder.bus.subscribe(halter, name=halter.name)``),
and after each update asks :attr:`Halter.reason`. Once it is set, the trainer records
:meth:`Halter.anomaly`, stops at its next chance and finishes the run with
:attr:`Halter.status` and that reason. The judging is the halter's: ``sanctum`` ships one
(``sanctum.HaltGate``, judging by the rules ``sanctum check`` applies), and neither this
package nor a trainer needs to know how it decides. So the contract knows no consumer, and
a trainer depends only on this protocol. Standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

if TYPE_CHECKING:
    from telemetry.events import AnomalyPayload, Event, RunStatus

HALT_LEVELS: Final = ("critical", "warning")
"""The health levels a run may be halted on (``ppo train --halt-on``'s choices)."""
HALT_PREFIX: Final = "halted: "
"""How a halted run's reason begins (``run_finished.reason``), so that whoever reads how a
run ended knows it was halted: ``halted: <rule> <level> (...)``."""


@runtime_checkable
class Halter(Protocol):
    """A bus sink that judges each event it is given and says when the run must stop."""

    name: str
    """Its name as a sink of the recorder's bus."""
    status: RunStatus
    """How a halted run finishes (``run_finished.status``)."""

    def __call__(self, event: Event) -> None:
        """Fold one event of the run (the bus hands it every event, ``run_started`` first;
        a new ``run_started`` begins a new run)."""

    @property
    def reason(self) -> str | None:
        """``halted: <rule> <level> (...)`` (:data:`HALT_PREFIX`) once the run must stop;
        None until then."""

    def anomaly(self, global_step: int | None = None) -> AnomalyPayload:
        """The critical anomaly that records the stop (only once :attr:`reason` is set)."""
