"""What every integration builds the same way: a rollout from the episodes that finished
in it (one home, so SB3's callback and the CleanRL helper cannot drift apart), and the
episodes themselves, added up from per-step rewards where a trainer hands over only those
(skrl, Tianshou)."""

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


class RunningEpisodes:
    """Each env's running return and length, across updates, and the episodes that ended
    since the last :meth:`drain`: fed one step of one env at a time."""

    def __init__(self) -> None:
        self._partial: dict[int, tuple[float, int]] = {}
        self._returns: list[float] = []
        self._lengths: list[float] = []

    def step(self, env: int, reward: float, done: bool) -> None:
        """One step of env ``env``: its reward, and whether its episode ended with it."""
        total, steps = self._partial.get(env, (0.0, 0))
        total, steps = total + reward, steps + 1
        if done:
            self._returns.append(total)
            self._lengths.append(float(steps))
            total, steps = 0.0, 0
        self._partial[env] = (total, steps)

    def drain(self) -> tuple[list[float], list[float]]:
        """(returns, lengths) of the episodes that ended since the last call."""
        found = self._returns, self._lengths
        self._returns, self._lengths = [], []
        return found
