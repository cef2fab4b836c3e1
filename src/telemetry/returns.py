"""A run's final return, defined once for every reader of the contract: the figure
``ppo train`` prints when it ends and the one ``sanctum`` reports (``summary``, ``diff``,
the learning gate) are this function of the same ``rollout`` events.

A ``rollout`` event carries the mean return of the episodes that finished in it and how
many did, not single returns, so the final return is a mean over whole rollouts: the
episode-weighted mean of the latest rollouts that together hold at least
:data:`FINAL_EPISODES` finished episodes (all of them while fewer have finished). A rollout
without a finished episode, or with a non-finite mean, says nothing about the return and is
left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

FINAL_EPISODES: Final = 20
"""Episodes a run's final (and initial) return is the mean of, at least."""

FINAL_RETURN: Final = f"final return (mean of the last {FINAL_EPISODES}+ episodes)"
"""The label of the figure wherever it is printed."""
ROLLOUT_MEAN: Final = "rollout mean"
"""The label of the latest rollout's figure: the mean return of the episodes that finished in
it (with their min and max, labelled ``min…max``), which a live view follows."""
BEST_ROLLOUT_MEAN: Final = "best rollout mean"
"""The label of the highest rollout mean of the whole run."""


EPISODES_COUNTED: Final = 2**53
"""A rollout's episode count at most that weighs in a mean: the largest a float holds
exactly. A log's count of 10**400 (no rollout finishes that many) would overflow the sum."""


def final_return(
    rollouts: Iterable[tuple[int, float | None]], episodes: int = FINAL_EPISODES
) -> float | None:
    """The mean return of the last ``episodes`` episodes or more, from ``(episodes,
    episode_return_mean)`` of each rollout in order; None: no episode finished."""
    kept = [
        (n, mean)
        for n, mean in rollouts
        if 0 < n <= EPISODES_COUNTED and mean is not None and math.isfinite(mean)
    ]
    count, total = 0, 0.0
    for n, mean in reversed(kept):
        count += n
        total += n * mean
        if count >= episodes:
            break
    return total / count if count else None
