"""Several runs at once: their labels, one row of figures per run, and seeds grouped.

Which runs a command names is :mod:`sanctum.run_files`'. Pure functions, no Textual: the
run table of ``sanctum RUN RUN ...`` and ``sanctum --all DIR`` is drawn from what is
computed here, and tested without a screen.

- A run's row holds what a sweep is watched for: connection, the run's verdict (``sanctum
  check``'s under the same ``--fail-on``, so far while the run is live), progress, steps
  per second, the latest update, the mean return of the latest rollout that finished an
  episode, and the *worst KL*: the largest ``approx_kl`` of the
  whole run in nats (NaN once any was non-finite), coloured by the worst level the KL rule
  reached; with a KL rule judged in nats (a thresholds file's), the worst value it judged.
- Seeds are the unit of replication, so runs whose ``run_started`` records the same
  environment and the same config except ``telemetry.run_config.PER_RUN_KEYS`` (the seed,
  and what only names or places one run) form a group. A group shows the median and the
  spread of its members' figures, the spread as the smallest and the largest value
  (min..max: with the three to five seeds of a sweep, quartiles would be guesses).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sanctum.health.levels import Level, band_of
from sanctum.health.rule_judge import RuleJudge
from sanctum.health.thresholds import Thresholds
from sanctum.model.snapshot import Connection, RunSnapshot, connection_of
from sanctum.model.verdict import RunVerdict
from telemetry.recorder import EVENTS_FILE
from telemetry.run_config import PER_RUN_KEYS


def run_labels(paths: Sequence[Path]) -> list[str]:
    """A short distinct name per run: its folder (or file) name, with as many parent
    folders as it takes to tell two runs apart."""
    parts = [_named_parts(path) for path in paths]
    depth = [1] * len(paths)
    while True:
        labels = ["/".join(p[-d:]) for p, d in zip(parts, depth, strict=True)]
        clash = {label for label in labels if labels.count(label) > 1}
        grow = [i for i, label in enumerate(labels) if label in clash and depth[i] < len(parts[i])]
        if not grow:
            return labels
        for i in grow:
            depth[i] += 1


def _named_parts(path: Path) -> tuple[str, ...]:
    """The path's parts, without ``events.jsonl`` (the run folder names the run)."""
    parts = path.parts[:-1] if path.name == EVENTS_FILE else path.parts
    return parts or (path.name,)


# -- one run -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorstKL:
    """The worst KL of a run so far, the update it came at, and the band it lies in."""

    value: float | None = None
    update: int | None = None
    level: Level = Level.PENDING


def worst_kl(judge: RuleJudge | None, maximum: float | None, nonfinite: int) -> WorstKL:
    """From the KL rule's judge (its worst judged value) when the rule judges KL in nats,
    else the metric's finite ``maximum`` (or NaN when a value was ``nonfinite``), coloured
    by the worst level the rule reached (a rule judging KL per clip fraction)."""
    if judge is not None and judge.rule.in_metric_units:
        if judge.worst is None:
            return WorstKL()
        level = band_of(judge.rule, judge.worst, judge.worst_update or 0)
        return WorstKL(judge.worst, judge.worst_update, level)
    if judge is not None and maximum is not None and not nonfinite:
        reached = (
            Level.CRITICAL
            if judge.at_critical
            else Level.WARNING
            if judge.at_warning
            else Level.HEALTHY
        )
        return WorstKL(maximum, None, reached if judge.judged else Level.PENDING)
    if nonfinite:
        return WorstKL(math.nan, None, Level.CRITICAL)
    return WorstKL(maximum, None, Level.PENDING if maximum is None else Level.HEALTHY)


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run in the table."""

    label: str
    connection: Connection
    silent: float | None
    """Seconds without an event, while STALE."""
    verdict: RunVerdict
    """The run's verdict (``sanctum check``'s; so far, while the run is live)."""
    progress: float | None
    update: int | None
    steps_per_second: float | None
    last_return: float | None
    worst_kl: WorstKL
    group_key: str | None
    """Runs with the same key are seeds of one configuration (None: not started)."""
    seed: int | None
    config: Mapping[str, Any]
    problem: str | None = None
    """Why the log cannot be followed at all (then the figures are the last ones read)."""

    @property
    def level(self) -> Level:
        """The verdict's level (colours it; a group is as bad as its worst member)."""
        return self.verdict.level


def run_row(
    label: str,
    run: RunSnapshot,
    verdict: RunVerdict,
    update: int | None,
    kl: WorstKL,
    now: float,
    thresholds: Thresholds,
    problem: str | None = None,
    group: str | None = None,
) -> RunRow:
    """The row of one run from its facts and verdict at time ``now`` (``group``: its
    :func:`group_key` when the caller has it already)."""
    connection = connection_of(run, now, thresholds.stale_seconds)
    silent = None
    if connection is Connection.STALE and run.last_event_ts is not None:
        silent = now - run.last_event_ts
    return RunRow(
        label=label,
        connection=connection,
        silent=silent,
        verdict=verdict,
        progress=run.progress,
        update=update,
        steps_per_second=run.steps_per_second,
        last_return=run.episode_return,
        worst_kl=kl,
        group_key=None if run.status is None else group or group_key(run.env_id, run.config),
        seed=run.seed if run.seed is not None else run.known.seed,
        config=run.config,
        problem=problem,
    )


def group_key(env_id: str | None, config: Mapping[str, Any]) -> str:
    """The environment and the config without :data:`~telemetry.run_config.PER_RUN_KEYS`,
    as canonical JSON."""
    kept = {k: v for k, v in config.items() if k not in PER_RUN_KEYS}
    return json.dumps({"env_id": env_id, "config": kept}, sort_keys=True, default=str)


# -- seeds grouped -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spread:
    """Median, smallest and largest of the members that have a value, and how many do."""

    median: float | None = None
    low: float | None = None
    high: float | None = None
    count: int = 0


def spread_of(values: Sequence[float | None]) -> Spread:
    """Median and min..max of the values present; NaN counts as the highest (for KL, the
    worst) and, when it is in the middle, the median is NaN."""
    present = sorted((v for v in values if v is not None), key=_nan_last)
    if not present:
        return Spread()
    n = len(present)
    middle = present[n // 2]
    if n % 2 == 0 and not math.isnan(middle):
        middle = statistics.fmean(present[n // 2 - 1 : n // 2 + 1])
    return Spread(middle, present[0], present[-1], n)


def _nan_last(value: float) -> float:
    return math.inf if math.isnan(value) else value


@dataclass(frozen=True, slots=True)
class GroupRow:
    """The seeds of one configuration in the table."""

    label: str
    """What sets this group apart from the others: ``learning_rate=0.0025``."""
    members: tuple[int, ...]
    """Indices of its runs, in table order."""
    seeds: tuple[int | None, ...]
    connections: tuple[Connection, ...]
    level: Level
    """The worst member's level."""
    at_level: int
    """Members at that level."""
    progress: Spread
    update: int | None
    """The latest update of any member."""
    steps_per_second: Spread
    last_return: Spread
    worst_kl: Spread
    worst_kl_level: Level


def group_rows(rows: Sequence[RunRow]) -> tuple[tuple[GroupRow, ...], tuple[int, ...]]:
    """The groups in order of their first run, and each run's group index."""
    order: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        order.setdefault(row.group_key or f"\0{i}", []).append(i)
    members = list(order.values())
    labels = group_labels([rows[m[0]] for m in members])
    groups = tuple(
        _group(label, [rows[i] for i in m], m) for label, m in zip(labels, members, strict=True)
    )
    index = [0] * len(rows)
    for g, m in enumerate(members):
        for i in m:
            index[i] = g
    return groups, tuple(index)


def _group(label: str, rows: list[RunRow], members: list[int]) -> GroupRow:
    level = max(row.level for row in rows)
    updates = [row.update for row in rows if row.update is not None]
    return GroupRow(
        label=label,
        members=tuple(members),
        seeds=tuple(row.seed for row in rows),
        connections=tuple(row.connection for row in rows),
        level=level,
        at_level=sum(row.level is level for row in rows),
        progress=spread_of([row.progress for row in rows]),
        update=max(updates, default=None),
        steps_per_second=spread_of([row.steps_per_second for row in rows]),
        last_return=spread_of([row.last_return for row in rows]),
        worst_kl=spread_of([row.worst_kl.value for row in rows]),
        worst_kl_level=max(row.worst_kl.level for row in rows),
    )


def group_labels(firsts: Sequence[RunRow]) -> list[str]:
    """Per group (given its first run): the config values that differ between groups, as
    ``key=value``, the keys with the most distinct values first (ties in config order, the
    environment first), so a label cut to its first words keeps what sets the groups apart;
    a run not started yet is named by its label. One group: its environment."""
    started = [row for row in firsts if row.group_key is not None]
    views = {id(row): _config_view(row) for row in started}
    distinct = {
        key: len({json.dumps(v.get(key), sort_keys=True, default=str) for v in views.values()})
        for key in dict.fromkeys(k for view in views.values() for k in view)
    }  # the settings a sweep varies most come first: a cut label keeps them
    differing = sorted((k for k, n in distinct.items() if n > 1), key=lambda k: -distinct[k])
    labels = []
    for row in firsts:
        if row.group_key is None:
            labels.append(f"{row.label} (not started)")
            continue
        view = views[id(row)]
        words = [f"{k}={_short(view.get(k))}" for k in differing]
        labels.append(" ".join(words) if words else str(view.get("env_id") or "(no env id)"))
    return labels


def _config_view(row: RunRow) -> dict[str, Any]:
    """The environment and the grouped config keys of a started run."""
    key = json.loads(row.group_key or "{}")
    return {"env_id": key.get("env_id"), **key.get("config", {})}


def _short(value: object) -> str:
    """A config value in a label: strings bare, everything else as JSON."""
    return (
        value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))
    )
