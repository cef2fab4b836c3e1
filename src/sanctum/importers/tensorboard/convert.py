"""A TensorBoard log as an event log: scalars grouped by step into rollouts and updates.

Every distinct step at which a tag mapped to a ``ppo_update`` field was logged is one
update, numbered 0, 1, 2... in step order; its ``global_step`` is that step (for a trainer
that logs its updates late, SB3, the step of the rollout it trained on). A rollout is
written at every step with a rollout figure (SPS, SB3's episode means) or with finished
episodes: each episode counts in the first such step at or after the step it was logged
at, which for CleanRL is the update the rollout fed. Events carry TensorBoard's wall
times, so a replay keeps the run's pace (and a gap between two logged steps longer than
the stall limit, 10x the run's pace and at least ``stall_seconds``, reads as a stall).

What a log lacks is written honestly: a step with update figures but no approx_kl or
clip_fraction, where the log holds that tag at other steps, is not an update (a warning
anomaly says so), unless one of its figures is NaN or Inf (then it is, and is judged); a
log with no tag for them at all writes updates without them;
``early_stopped``, required by the contract but logged by neither SB3 nor CleanRL, is
written false and the config says so; explained variance NaN (both trainers' "Var(R) =
0") is written as not measured.
Tags no table maps are listed in ``run_started.config.tensorboard_unmapped_tags``.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from sanctum.importers.tensorboard.mapping import (
    COMPONENT,
    EVERY_UPDATE,
    ROLLOUT_FIELDS,
    UPDATE_FIELDS,
    NumberKind,
    TagMapping,
    describe,
)
from sanctum.importers.tensorboard.reader import Point, TBLog
from telemetry.events import AnomalyPayload, Payload, PPOUpdatePayload, RolloutPayload
from telemetry.run_config import changed_to

Values = dict[str, tuple[float, float]]
"""field -> (value, wall time) at one step: the last value logged there wins."""


@dataclass(frozen=True, slots=True)
class Timed:
    """A payload and the wall time it is written at."""

    ts: float
    payload: Payload


@dataclass(slots=True)
class Step:
    """Everything logged at one step, by target."""

    update: Values = field(default_factory=dict)
    rollout: Values = field(default_factory=dict)
    returns: list[Point] = field(default_factory=list)
    lengths: list[Point] = field(default_factory=list)


def _convert(value: float, kind: NumberKind, name: str) -> float | int | bool | None:
    """A logged float as the field's type; None where it means "not measured"."""
    if name == "explained_variance" and math.isnan(value):
        return None  # both trainers log NaN when Var(R) = 0: our null
    if kind is bool:
        return value != 0
    if kind is int:
        return round(value) if math.isfinite(value) else None
    return value


def gather(log: TBLog, mapping: TagMapping) -> dict[int, Step]:
    """The mapped scalars by step (episodes moved to the rollout they finished in)."""
    steps: dict[int, Step] = defaultdict(Step)
    episodes: list[tuple[str, Point]] = []
    for tag, points in log.scalars.items():
        for target in mapping.tags.get(tag, ()):
            if target.kind in ("config", "ignore"):
                continue
            name = COMPONENT + target.field if target.kind == "component" else target.field
            for p in points:
                value = p.value * target.scale
                if target.kind == "episode":
                    episodes.append((name, Point(p.step, p.wall_time, value)))
                elif target.kind == "rollout":
                    steps[p.step].rollout[name] = (value, p.wall_time)
                else:
                    steps[p.step].update[name] = (value, p.wall_time)
    _place_episodes(steps, episodes)
    return dict(sorted(steps.items()))


def _kinds(mapping: TagMapping, tag: str) -> set[str]:
    return {t.kind for t in mapping.tags.get(tag, ())}


def update_steps_apart(log: TBLog, mapping: TagMapping) -> bool:
    """Whether the update tags' steps count something other than the rollout tags' (the
    env steps): ordered by wall time, the steps of update and rollout points go back more
    than once (Tianshou's logger writes ``update/*`` at gradient-step counts and ``train/*``
    at env steps), while the rollouts' own steps never do. Logs whose tags share one unit
    only ever move forward, or (a run resumed from a checkpoint) go back together."""
    points: list[tuple[float, int]] = []
    rollouts: list[tuple[float, int]] = []
    update = False
    for tag, series in log.scalars.items():
        kinds = _kinds(mapping, tag)
        if kinds & {"update", "component"}:
            update = True
        elif kinds & {"rollout", "episode"}:
            rollouts += [(p.wall_time, p.step) for p in series]
        else:
            continue
        points += [(p.wall_time, p.step) for p in series]
    if not (rollouts and update):
        return False
    rollouts.sort()
    if any(later[1] < earlier[1] for earlier, later in pairwise(rollouts)):
        return False  # the rollouts go back too: a run resumed from a checkpoint, one unit
    points.sort()
    backs = sum(later[1] < earlier[1] for earlier, later in pairwise(points))
    return backs > 1


def place_updates_by_time(log: TBLog, mapping: TagMapping) -> tuple[TBLog, str]:
    """The log with each update's points moved to the env step of the last rollout or
    episode point logged before them (by wall time; the k-th update after one rollout at
    that step + k - 1), and what was done, in words."""
    marks = sorted(
        (p.wall_time, p.step)
        for tag, series in log.scalars.items()
        if _kinds(mapping, tag) & {"rollout", "episode"}
        for p in series
    )
    times = [t for t, _ in marks]
    update_tags = [t for t in log.scalars if _kinds(mapping, t) & {"update", "component"}]
    # an update is the points of one original step; it is placed by its latest wall time
    by_step: dict[int, float] = {}
    for tag in update_tags:
        for p in log.scalars[tag]:
            by_step[p.step] = max(by_step.get(p.step, -math.inf), p.wall_time)
    placed: dict[int, int] = {}
    taken: set[int] = set()
    for step, wall in sorted(by_step.items(), key=lambda item: item[1]):
        i = bisect_left(times, wall + 1e-9) - 1
        at = marks[i][1] if i >= 0 else 0
        while at in taken:
            at += 1
        taken.add(at)
        placed[step] = at
    scalars = {
        tag: (
            tuple(Point(placed[p.step], p.wall_time, p.value) for p in series)
            if tag in update_tags
            else series
        )
        for tag, series in log.scalars.items()
    }
    lo, hi = min(by_step, default=0), max(by_step, default=0)
    said = (
        f"the update tags are not at the rollout tags' steps (their steps, {lo}..{hi}, go "
        "back and forth against the rollouts' by wall time: Tianshou writes update/* at "
        "gradient-step counts): each update is placed at the env step of the last rollout "
        "logged before it, by wall time"
    )
    return replace(log, scalars=scalars), said


def _place_episodes(steps: dict[int, Step], episodes: Sequence[tuple[str, Point]]) -> None:
    """Each episode into the first step at or after its own that has figures (the step
    of the update its rollout fed), or at its own step past the last of them."""
    bounds = sorted(steps)
    for name, point in sorted(episodes, key=lambda e: e[1].step):
        i = bisect_left(bounds, point.step)
        step = steps[bounds[i]] if i < len(bounds) else steps[point.step]
        (step.returns if name == "episode_return" else step.lengths).append(point)


def _mean(points: Sequence[Point]) -> float | None:
    return math.fsum(p.value for p in points) / len(points) if points else None


def rollout_payload(step: Step, update: int, global_step: int) -> RolloutPayload:
    """The rollout at ``step``: its figures, and the episodes that finished in it."""
    fields: dict[str, Any] = {
        name: _convert(value, ROLLOUT_FIELDS[name], name)
        for name, (value, _) in step.rollout.items()
    }
    if step.returns or step.lengths:
        fields["episodes"] = max(len(step.returns), len(step.lengths))
    if step.returns:
        fields["episode_return_mean"] = _mean(step.returns)
        fields["episode_return_min"] = min(p.value for p in step.returns)
        fields["episode_return_max"] = max(p.value for p in step.returns)
    if step.lengths:
        fields["episode_length_mean"] = _mean(step.lengths)
    return RolloutPayload(update=update, global_step=global_step, **fields)


def update_payload(
    values: Values,
    update: int,
    global_step: int,
    action_count: int | None,
    expected: Collection[str] = EVERY_UPDATE,
    constants: Mapping[str, float] | None = None,
) -> PPOUpdatePayload | None:
    """The update at one step; None when it lacks a field of ``expected`` (those of
    approx_kl and clip_fraction the log holds) and every value it has is finite: a step
    with a NaN or Inf in any mapped field is an update, judged, whatever it lacks (a run
    going NaN may stop logging its KL first). ``constants``: fields every update holds
    where the log does not say otherwise."""
    fields: dict[str, Any] = {
        name: _convert(value, UPDATE_FIELDS[name], name)
        for name, (value, _) in values.items()
        if not name.startswith(COMPONENT)
    }
    components = {
        name.removeprefix(COMPONENT): value
        for name, (value, _) in values.items()
        if name.startswith(COMPONENT)
    }
    written = [v for v in (*fields.values(), *components.values()) if isinstance(v, float)]
    if all(map(math.isfinite, written)) and any(name not in values for name in expected):
        return None
    if components:
        fields["reward_components"] = components
    for name, value in (constants or {}).items():
        fields.setdefault(name, value)
    fields.setdefault("early_stopped", False)
    entropy = fields.get("entropy")
    if action_count is not None and action_count > 1 and isinstance(entropy, float):
        fields.setdefault("entropy_normalized", entropy / math.log(action_count))
    return PPOUpdatePayload(update=update, global_step=global_step, **fields)


def _missing(values: Values, step: int, expected: Collection[str]) -> AnomalyPayload:
    lacking = [name for name in expected if name not in values]
    absent = " and ".join(lacking)
    return AnomalyPayload(
        severity="warning",
        metric=lacking[0],
        message=f"TensorBoard step {step} has update figures but no {absent}: "
        "not imported as an update",
        global_step=step,
    )


def _latest(times: Iterable[float]) -> float:
    return max(times, default=-math.inf)


def global_steps(log: TBLog, mapping: TagMapping) -> dict[int, int]:
    """Each step's global step, from :attr:`TagMapping.global_step_tag` (its finite
    values, rounded); empty without one."""
    if mapping.global_step_tag is None:
        return {}
    points = log.scalars.get(mapping.global_step_tag, ())
    return {p.step: round(p.value) for p in points if math.isfinite(p.value)}


def step_events(
    steps: Mapping[int, Step],
    mapping: TagMapping,
    action_count: int | None,
    expected: Collection[str] = EVERY_UPDATE,
    at_step: Mapping[int, int] | None = None,
    constants: Mapping[str, float] | None = None,
) -> list[Timed]:
    """Rollouts, updates and warnings in the order the trainer produced them (an update
    lacking a field of ``expected`` is a warning). ``at_step``: a step's global step where
    it is not the step (:func:`global_steps`); ``constants``: see :func:`update_payload`."""
    out: list[Timed] = []
    updates, rollout_step = 0, None
    gs = (lambda step: at_step.get(step, step)) if at_step else (lambda step: step)
    for step, found in steps.items():
        rollout = found.rollout or found.returns or found.lengths
        if rollout and not mapping.updates_logged_late:
            out.append(Timed(_step_time(found), rollout_payload(found, updates, gs(step))))
        if found.update:
            at = rollout_step if mapping.updates_logged_late and rollout_step is not None else step
            payload = update_payload(
                found.update, updates, gs(at), action_count, expected, constants
            )
            t = _latest(w for _, w in found.update.values())
            missing = _missing(found.update, step, expected) if payload is None else payload
            out.append(Timed(t, missing))
            updates += payload is not None
        if rollout and mapping.updates_logged_late:
            out.append(Timed(_step_time(found), rollout_payload(found, updates, gs(step))))
        if rollout:
            rollout_step = step
    return _monotone(out)


def _step_time(found: Step) -> float:
    times = [w for _, w in found.rollout.values()]
    times += [p.wall_time for p in (*found.returns, *found.lengths)]
    return _latest(times)


def _monotone(events: Sequence[Timed]) -> list[Timed]:
    """Times that never go back (the last of a step's values may precede an earlier
    event's; a reader takes a step back in time for a logging bug)."""
    out: list[Timed] = []
    last = -math.inf
    for e in events:
        last = max(last, e.ts)
        out.append(Timed(last, e.payload))
    return out


def config_values(log: TBLog, mapping: TagMapping) -> dict[str, Any]:
    """``config.NAME`` tags: the first value, and ``NAME_end`` when the value changed."""
    config: dict[str, Any] = {}
    for tag, targets in mapping.tags.items():
        points = log.scalars.get(tag, ())
        for target in targets:
            if target.kind != "config" or not points:
                continue
            first, last = points[0].value * target.scale, points[-1].value * target.scale
            config[target.field] = first
            if last != first:
                config[changed_to(target.field)] = last
    return config


def unmapped(log: TBLog, mapping: TagMapping) -> list[str]:
    """Scalar tags no entry of the mapping names (nor its global step's)."""
    known = {*mapping.tags, mapping.global_step_tag}
    return sorted(tag for tag in log.scalars if tag not in known)


def ignored(log: TBLog, mapping: TagMapping) -> dict[str, str]:
    """Tags in the log the mapping knows and leaves out, with why."""
    return {
        tag: targets[0].reason or "ignored"
        for tag, targets in mapping.tags.items()
        if targets[0].kind == "ignore" and tag in log.scalars
    }


def mapped(log: TBLog, mapping: TagMapping) -> dict[str, str]:
    """Tags in the log that were imported, and where to."""
    found = {
        tag: describe(targets)
        for tag, targets in mapping.tags.items()
        if targets[0].kind != "ignore" and tag in log.scalars
    }
    step_tag = mapping.global_step_tag
    if step_tag is not None and step_tag in log.scalars:
        found[step_tag] = "global_step"
    return found
