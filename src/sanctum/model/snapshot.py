"""The frozen picture of a run that every screen, ``check`` and ``summary`` reads.

A :class:`SanctumSnapshot` holds tuples and read-only mappings only, so a widget never
sees a deque that changes under it. :class:`RunFacts` is the one list of a run's facts:
the live :class:`~sanctum.model.state.RunState` and the frozen :class:`RunSnapshot` are that
class with the return history typed two ways. Nothing here computes; the aggregator fills
it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from enum import Enum
from typing import Any, Generic, Literal, TypeVar

from sanctum.health.levels import HealthReport, Level
from sanctum.health.thresholds import Thresholds
from sanctum.model.trend import Trend
from sanctum.model.verdict import PENDING, RunVerdict
from telemetry.eventlog import SkippedLine
from telemetry.run_config import RunConfig

RunPhase = Literal["running", "completed", "failed", "interrupted"]


class Connection(str, Enum):
    """What the log says about the trainer right now."""

    WAITING = "waiting"
    """No event yet (the file may not exist yet)."""
    LIVE = "live"
    """Running, and an event arrived within ``stale_seconds``."""
    STALE = "stale"
    """Running, but silent for longer than ``stale_seconds``: slow, hung or killed."""
    FINISHED = "finished"
    """``run_finished`` with status completed."""
    FAILED = "failed"
    """``run_finished`` with status failed (an exception in the trainer)."""
    INTERRUPTED = "interrupted"
    """``run_finished`` with status interrupted (Ctrl-C or a stop request)."""


def progress_of(global_step: int | None, total_steps: int | None) -> float | None:
    """Fraction of ``total_steps`` done, 0..1 (a run that overshoots its total, as a last
    rollout may, reads 1); None without a total or a step. Every view's progress."""
    if total_steps is None or global_step is None or total_steps <= 0:
        return None
    return min(1.0, global_step / total_steps)


@dataclass(frozen=True, slots=True)
class MetricSnapshot:
    """One PPO metric: latest value, recent history, longer series and its level."""

    name: str
    value: float | None
    """Latest value; None when the latest update did not measure it."""
    history: tuple[float | None, ...]
    """Last HISTORY_LEN updates, oldest first, aligned with ``SanctumSnapshot.history_updates``."""
    series: tuple[float | None, ...]
    """Last SERIES_LEN updates, aligned with ``SanctumSnapshot.series_updates``."""
    level: Level
    """From the health report of the latest update."""
    trend: float | None
    """Least-squares slope of ``history`` per update; None with fewer than 2 finite points."""
    direction: Trend = "unknown"
    """Which way ``history`` is going, for the arrow (:func:`sanctum.model.trend.trend_of`)."""
    statistic: float | None = None
    """What the metric's rule judged at the latest update (its value, rolling median or
    jump); None without a rule or while the rule does not judge."""
    note: str | None = None
    """Why the rule does not judge yet (``warm-up``, ``not judged: returns nearly
    constant``), or a band not yet persisted (``crit 1/2``)."""


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """A notable event for the event-log panel."""

    kind: Literal[
        "start",
        "early_stop",
        "anomaly",
        "finish",
        "reset",
        "skipped",
        "gap",
        "trainer",
        "bug",
        "stall",
        "waiting",
    ]
    level: Level
    """HEALTHY for start/completed; WARNING or CRITICAL for trouble."""
    text: str
    ts: float | None = None
    seq: int | None = None
    update: int | None = None


Returns = TypeVar("Returns", bound=Sequence[float])
"""``deque[float]`` in the live state, ``tuple[float, ...]`` in its frozen snapshot."""


@dataclass(kw_only=True, slots=True)
class RunFacts(Generic[Returns]):
    """Facts about the run as a whole, from every event kind: the one list of its fields.

    :class:`RunState` (live, mutable, deques) and :class:`RunSnapshot` (frozen, tuples) are
    this class with the return history typed two ways, so a field is declared once here and
    copied into the snapshot by name.
    """

    run_id: str | None = None
    env_id: str | None = None
    trainer: str | None = None
    """``name version`` of the program that wrote the log."""
    seed: int | None = None
    schema: int | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    known: RunConfig = field(default_factory=RunConfig)
    """The keys of ``config`` the contract gives a meaning, read once at ``run_started``
    (:class:`telemetry.run_config.RunConfig`)."""
    status: RunPhase | None = None
    """None before any event; ``running`` until ``run_finished``."""
    reason: str | None = None
    started_ts: float | None = None
    last_event_ts: float | None = None
    finished_ts: float | None = None
    duration_seconds: float | None = None
    global_step: int | None = None
    step_unit: str | None = None
    """``run_started.step_unit``: what ``global_step``, ``total_steps`` and
    ``steps_per_second`` count (None: environment steps)."""
    total_steps: int | None = None
    updates: int = 0
    """``ppo_update`` events seen."""
    steps_per_second: float | None = None
    episodes: int = 0
    episode_return: float | None = None
    """Mean return of the latest rollout that finished an episode."""
    episode_return_min: float | None = None
    episode_return_max: float | None = None
    episode_return_best: float | None = None
    """The highest finite rollout mean of the whole run (:data:`telemetry.returns.
    BEST_ROLLOUT_MEAN`), not only of the rollouts a series keeps."""
    episode_length: float | None = None
    episode_returns: Returns
    """Mean returns of the last HISTORY_LEN rollouts that finished an episode, oldest first."""
    episode_return_series: Returns
    """The same for the last SERIES_LEN such rollouts."""
    episode_return_updates: Sequence[int]
    """The update index of each of ``episode_return_series`` (aligned with it)."""
    anomalies_warning: int = 0
    anomalies_critical: int = 0
    events: int = 0
    last_seq: int | None = None
    seq_gaps: int = 0
    """Times ``seq`` jumped forward: events the log lost (should stay 0)."""
    seq_missing: int = 0
    """Events the ``seq`` gaps say are missing, in all (an unreadable line leaves one)."""
    first_gap_seq: int | None = None
    """The ``seq`` of the event after the first gap."""
    refused: int = 0
    """One event missing right before a ``run_finished`` failed: the write a full disk
    refused (the README's one gap), counted apart from the events the log lost."""
    skipped_lines: int = 0
    """Lines skipped while this run was read (each may be one of its events, so a gap in
    ``seq`` it accounts for was not lost)."""
    first_update_index: int | None = None
    """The index of the run's first ``ppo_update`` (a resumed run's continues its
    checkpoint's count)."""
    resumed_from_update: int | None = None
    """``run_started.config.resumed_from.update``: where a resumed run's update count
    starts (None: not a resume, so it starts at update 0)."""
    seq_back: int = 0
    """Times ``seq`` did not increase (an event repeated or out of order; should stay 0)."""
    first_seq_back: int | None = None
    """The ``seq`` of the first event whose ``seq`` did not increase."""
    starts_repeated: int = 0
    """``run_started`` events of this run id after its first (a run starts once)."""
    finishes: int = 0
    """``run_finished`` events of this run (a run finishes once)."""
    after_finish: int = 0
    """Events of this run after its first ``run_finished`` (a log ends there)."""
    first_status: str | None = None
    """The status of the first ``run_finished``."""
    reported_updates: int | None = None
    """``run_finished.updates``: the updates the trainer says it completed (the count from
    update 0, so a resumed run's includes those before its first in this log)."""
    foreign_events: int = 0
    """Events of another run id in this run's log, left out."""
    foreign_runs: tuple[tuple[str, int], ...] = ()
    """(run id, events) of each other run id with events in this run's log (the first
    FOREIGN_KEPT run ids; ``foreign_events`` counts them all)."""
    failures_reported: int = 0
    """``run_finished`` events with status ``failed`` (the last one says how it ended: a
    failed followed by a completed is still a run that failed)."""
    first_failure: str | None = None
    """The reason of the first ``run_finished`` failed."""
    source_unread: tuple[str, ...] = ()
    """What an import could not read of its source (``run_started.config.source_unread``):
    a record cut short, a checksum that does not match... (empty: it read all of it)."""
    stalls: int = 0
    """Silences longer than the stall limit between two events of the unfinished run."""
    longest_stall: float | None = None
    """The longest such silence, in seconds."""
    longest_stall_pace: float | None = None
    """The run's pace (median interval between updates and heartbeats) when the longest
    silence ended: the limit it went past was ``stall_pace`` times that, or the floor."""
    first_stall_update: int | None = None
    """The update in progress during the first stall (the one after the last recorded)."""
    past_max_kl: int = 0
    """Updates whose ``approx_kl`` passed :data:`~sanctum.model.verdict.PAST_MAX_KL` times
    the run's declared ``max_kl`` with no early stop recorded (``early_stopped`` false)."""
    first_past_max_kl: int | None = None
    """The first such update."""
    most_past_max_kl: float | None = None
    """The largest ``approx_kl / max_kl`` of those updates."""

    @property
    def progress(self) -> float | None:
        """Fraction of ``total_steps`` done, 0..1; None when the run declares no total."""
        if self.total_steps is None or self.global_step is None:
            return None
        return progress_of(self.global_step, self.total_steps)

    def elapsed(self, now: float) -> float | None:
        """Seconds since ``run_started``: to ``now`` while running, to the finish after."""
        if self.started_ts is None:
            return None
        if self.duration_seconds is not None:
            return self.duration_seconds
        end = self.finished_ts if self.finished_ts is not None else now
        return max(0.0, end - self.started_ts)


@dataclass(kw_only=True)
class RunSnapshot(RunFacts["tuple[float, ...]"]):
    """Frozen copy of :class:`RunState`: assigning or deleting a field raises
    ``FrozenInstanceError``. (A frozen dataclass cannot derive from the mutable one, so the
    freeze is done here, where it costs nothing on the aggregator's hot path.)"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_frozen", False):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def connection_of(run: RunSnapshot, now: float, stale_seconds: float) -> Connection:
    """The connection state at time ``now`` (the caller's clock: wall or replay)."""
    if run.status is None:
        return Connection.WAITING
    if run.status == "completed":
        return Connection.FINISHED
    if run.status == "failed":
        return Connection.FAILED
    if run.status == "interrupted":
        return Connection.INTERRUPTED
    if run.last_event_ts is not None and now - run.last_event_ts > stale_seconds:
        return Connection.STALE
    return Connection.LIVE


@dataclass(frozen=True, slots=True)
class SkipCounts:
    """Lines the reader could not use, and how often the log restarted."""

    malformed: int = 0
    unknown_kind: int = 0
    resets: int = 0
    last_reset: str | None = None
    lines: tuple[SkippedLine, ...] = ()
    """The first skipped lines (SKIPPED_KEPT of them at most), in file order."""


@dataclass(frozen=True, slots=True)
class SanctumSnapshot:
    """Everything a screen, ``check`` or ``summary`` needs, frozen at time ``now``."""

    now: float
    connection: Connection
    run: RunSnapshot
    update: int | None
    """0-based index of the latest ``ppo_update``; None before the first."""
    metrics: Mapping[str, MetricSnapshot]
    """Every PPO metric (contract order), read-only."""
    history_updates: tuple[int, ...]
    """Update indices of the metric histories."""
    series_updates: tuple[int, ...]
    """Update indices of the metric series."""
    health: HealthReport
    """Levels and verdict of the latest update: what happens now."""
    return_direction: Trend
    """Which way the recent mean episode returns are going."""
    early_stops: int
    last_early_stop_reason: str | None
    policy_drift_rate: float | None
    trust_region_health: float | None
    max_kl: float | None
    timeline: tuple[TimelineEntry, ...]
    """Notable events, oldest first."""
    skipped: SkipCounts
    thresholds: Thresholds
    """The rule table in force: widgets draw thresholds from here, never from constants."""
    run_verdict: RunVerdict = PENDING
    """The run's verdict, ``sanctum check``'s (so far, while the run is live)."""

    def metric(self, name: str) -> MetricSnapshot:
        """The snapshot of metric ``name`` (KeyError names unknown metrics)."""
        return self.metrics[name]

    @property
    def verdict(self) -> str:
        """The verdict at the latest update, e.g. ``FAIL: KL (+2)`` (the run's own is
        ``run_verdict``)."""
        return self.health.verdict
