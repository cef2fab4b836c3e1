"""``ppo train --halt-on LEVEL``: the run stops itself when its health reaches LEVEL.

The judge is Sanctum's own (:class:`sanctum.live.halt.HaltGate`, the fold ``sanctum check``
reads), subscribed to rank 0's telemetry bus; there is no second set of rules in ppo. This
module is the one place ppo builds it, and imports Sanctum only inside :func:`halt_gate`,
so ``ppo train`` without ``--halt-on`` never loads Sanctum. The trainers only see the
:class:`Halter` protocol: after each update they ask :attr:`Halter.reason`, and once it is
set they record :meth:`Halter.anomaly`, save a checkpoint and finish the run with
:attr:`Halter.status` and that reason; ``ppo train`` then exits 1 (:data:`EXIT_HALTED`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from ppo.exits import EXIT_STOPPED

if TYPE_CHECKING:
    from ppo.distributed.world import World
    from telemetry.events import AnomalyPayload, Event, RunStatus

HALT_LEVELS: Final = ("critical", "warning")
"""The choices of ``--halt-on``, known before Sanctum is loaded (Sanctum's
:data:`~sanctum.live.halt.HALT_LEVELS`; a test holds the two equal)."""
EXIT_HALTED: Final = EXIT_STOPPED
"""``ppo train``'s exit code when the health gate stopped the run."""


class Halter(Protocol):
    """What a trainer needs of the gate (a bus sink that judges each event it is given)."""

    name: str
    status: RunStatus
    """How a halted run finishes."""

    def __call__(self, event: Event) -> None: ...

    @property
    def reason(self) -> str | None:
        """``halted: <rule> <level> (...)`` once the run must stop; None until then."""

    def anomaly(self, global_step: int | None = None) -> AnomalyPayload:
        """The critical anomaly that records the stop."""


def halt_gate(halt_on: str, thresholds: Path | None) -> Halter:
    """The gate for ``--halt-on halt_on`` judging by the rules of ``thresholds`` (None: the
    shipped ones). A bad file raises ValueError naming it."""
    from sanctum.live.halt import HaltGate  # Sanctum loads only for --halt-on

    return HaltGate(thresholds, halt_on)


def agreed_reason(halter: Halter | None, world: World, update: int) -> str | None:
    """Rank 0's verdict after ``update``, the same on every rank (a collective, so every
    rank calls it after every update when halting is on); None when there is no gate."""
    if halter is None:
        return None
    reason = halter.reason
    if world.distributed:
        reason = world.broadcast(reason, f"update {update} halt decision")
    return reason
