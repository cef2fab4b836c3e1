"""What every integration builds the same way: a rollout from the episodes that finished
in it (one home, so SB3's callback and the CleanRL helper cannot drift apart)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from telemetry.events import RolloutPayload


def rollout_payload(
    *,
    update: int,
    global_step: int,
    returns: Sequence[float],
    lengths: Sequence[float],
    steps_per_second: float | None,
) -> RolloutPayload:
    """The rollout that fed ``update``, with the episodes that finished in it (none: no
    episode statistics, never a zero return; no ``lengths``: no mean length)."""
    if not returns:
        return RolloutPayload(
            update=update, global_step=global_step, steps_per_second=steps_per_second
        )
    return RolloutPayload(
        update=update,
        global_step=global_step,
        episodes=len(returns),
        episode_return_mean=math.fsum(returns) / len(returns),
        episode_return_min=min(returns),
        episode_return_max=max(returns),
        episode_length_mean=math.fsum(lengths) / len(lengths) if lengths else None,
        steps_per_second=steps_per_second,
    )
