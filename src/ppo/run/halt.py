"""``ppo train --halt-on LEVEL``, inside the trainer: the run stops itself when its health
reaches LEVEL.

The trainers take any :class:`telemetry.halting.Halter` (``ppo train`` builds Sanctum's
``HaltGate`` in :mod:`ppo.cli.train`; ppo has no rules of its own): after each update they
ask for its reason, and once it is set they record its anomaly, save a checkpoint and
finish the run with its status and that reason; ``ppo train`` then exits 1
(:data:`EXIT_HALTED`). Several ranks stop together on rank 0's word
(:func:`agreed_reason`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ppo.exits import EXIT_STOPPED
from telemetry.halting import Halter

if TYPE_CHECKING:
    from ppo.distributed.world import World

EXIT_HALTED: Final = EXIT_STOPPED
"""``ppo train``'s exit code when the health gate stopped the run."""


def agreed_reason(halter: Halter | None, world: World, update: int) -> str | None:
    """Rank 0's verdict after ``update``, the same on every rank (a collective, so every
    rank calls it after every update when halting is on); None when there is no gate."""
    if halter is None:
        return None
    reason = halter.reason
    if world.distributed:
        reason = world.broadcast(reason, f"update {update} halt decision")
    return reason
