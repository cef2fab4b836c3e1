"""A run's episode-return curve, read from its rollouts: what ``diff`` and the learning gate
compare.

A rollout reports the mean return of the episodes that finished in it and how many did. One
rollout's mean is noisy (late in a CartPole run it is the mean of four episodes), so every
figure here is a *windowed* mean: at each rollout, the episode-weighted mean of the latest
rollouts that together hold at least ``episodes`` finished episodes (whole rollouts: the
log has per-rollout means, not single returns). The final return is that mean at the last
rollout (by default the last :data:`~sanctum.metrics.FINAL_EPISODES` episodes, the window of
the figure ``ppo train`` prints at the end), the initial return the same window from the
first rollout on, and the steps to a threshold the first step at which the windowed mean
reaches it. Returns are "higher is better", as every Gymnasium environment's are. A rollout
without a finished episode, or with a non-finite mean, says nothing about the return and is
left out.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sanctum.metrics import FINAL_EPISODES
from telemetry import returns
from telemetry.eventlog import open_reader
from telemetry.events import Rollout


@dataclass(frozen=True, slots=True)
class ReturnPoint:
    """One rollout in which episodes finished."""

    step: int
    """``global_step`` at the end of the rollout."""
    episodes: int
    mean: float
    """Mean return of the episodes that finished in the rollout (finite)."""


def curve_of(rollouts: Iterable[Rollout]) -> tuple[ReturnPoint, ...]:
    """The points of the rollouts that carry a return, in order (pure)."""
    return tuple(
        ReturnPoint(r.payload.global_step, r.payload.episodes, mean)
        for r in rollouts
        if (mean := r.payload.episode_return_mean) is not None
        and math.isfinite(mean)
        and 0 < r.payload.episodes <= returns.EPISODES_COUNTED  # an impossible count: unread
    )


def read_curve(path: Path, run_id: str) -> tuple[ReturnPoint, ...]:
    """The return curve of run ``run_id`` in the log at ``path`` (a file that started over
    keeps only what it holds now, as the scan does)."""
    rollouts: list[Rollout] = []
    for batch in open_reader(path).batches(snapshot=True):  # a growing file: as it was
        if batch.reset is not None:
            rollouts.clear()
        rollouts += [e for e in batch.events if isinstance(e, Rollout) and e.run_id == run_id]
    return curve_of(rollouts)


def smoothed(points: Sequence[ReturnPoint], episodes: int = FINAL_EPISODES) -> list[float]:
    """At each point, the episode-weighted mean return of the latest points that hold at
    least ``episodes`` episodes (all points so far while fewer have finished)."""
    means: list[float] = []
    left, count, total = 0, 0, 0.0
    for point in points:
        count += point.episodes
        total += point.episodes * point.mean
        while count - points[left].episodes >= episodes:
            count -= points[left].episodes
            total -= points[left].episodes * points[left].mean
            left += 1
        means.append(total / count)
    return means


def final_return(points: Sequence[ReturnPoint], episodes: int = FINAL_EPISODES) -> float | None:
    """The mean return of the last ``episodes`` episodes or more; None: no episode ended
    (:func:`telemetry.returns.final_return`, the definition ``ppo train`` prints too)."""
    return returns.final_return(((p.episodes, p.mean) for p in points), episodes)


def initial_return(points: Sequence[ReturnPoint], episodes: int = FINAL_EPISODES) -> float | None:
    """The mean return of the first ``episodes`` episodes or more; None: no episode ended."""
    return final_return(points[::-1], episodes)


def steps_to_reach(
    points: Sequence[ReturnPoint], threshold: float, episodes: int = FINAL_EPISODES
) -> int | None:
    """The first step at which the windowed mean return reaches ``threshold``; None: never."""
    for point, mean in zip(points, smoothed(points, episodes), strict=True):
        if mean >= threshold:
            return point.step
    return None


def sample_at(
    points: Sequence[ReturnPoint], steps: Sequence[int], episodes: int = FINAL_EPISODES
) -> list[float | None]:
    """The windowed mean return at each of ``steps``, linearly interpolated between
    rollouts; None before the first rollout with an episode or past the last one."""
    order = sorted(range(len(points)), key=lambda i: points[i].step)
    means = smoothed(points, episodes)
    xs = [points[i].step for i in order]
    ys = [means[i] for i in order]
    values: list[float | None] = []
    for step in steps:
        i = bisect_right(xs, step)
        if i == 0 or step > xs[-1]:
            values.append(None)
        elif xs[i - 1] == step:
            values.append(ys[i - 1])
        else:
            share = (step - xs[i - 1]) / (xs[i] - xs[i - 1])
            values.append(ys[i - 1] + share * (ys[i] - ys[i - 1]))
    return values


def equal_steps(last_a: int, last_b: int, count: int = 10) -> list[int]:
    """``count`` evenly spaced steps up to the last step both runs reached."""
    shared = min(last_a, last_b)
    if shared <= 0:
        return []
    return sorted({round(shared * k / count) for k in range(1, count + 1)})
