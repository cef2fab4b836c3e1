"""Live state of a run (mutable, owned by the aggregator) and its frozen snapshot.

History lives here as bounded deques; a :class:`SanctumSnapshot` hands out tuples and
read-only mappings only, so widgets never see a deque that changes under them.

:class:`TamiyoState` keeps the PPO policy's health row-oriented: the last 10 update
payloads (the sparkline history of *every* metric) and the last 600 (the chart series).
A payload is already a frozen Struct, so recording an update costs two deque appends
however many fields the contract grows, and the per-metric columns are cut once per
snapshot, not once per event. Any metric's current value and history are
``values()[metric]`` and ``history_of(metric)``; issue 4's names for KL,
``kl_divergence`` and ``kl_divergence_history``, are properties. ``None`` stays ``None``
all the way: "not measured" is never a zero.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field, fields
from enum import Enum
from operator import attrgetter
from typing import Any, Final, Generic, Literal, TypeVar

import msgspec

from sanctum.health import HealthReport, Level
from sanctum.metrics import PPO_METRIC_POSITIONS, PPO_METRICS
from sanctum.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.trend import Trend, least_squares_slope
from telemetry.events import PPOUpdatePayload

HISTORY_LEN: Final = 10
"""Updates kept for sparklines and the drift rate."""
SERIES_LEN: Final = 600
"""Updates kept for charts."""
EVENT_LOG_LEN: Final = 200
"""Notable events kept for the event-log panel."""
TOTAL_STEPS_KEYS: Final = ("total_steps", "total_timesteps")
"""``run_started.config`` keys that may declare the planned environment steps."""

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
    """Which way ``history`` is going, for the arrow (:func:`sanctum.trend.trend_of`)."""
    statistic: float | None = None
    """What the metric's rule judged at the latest update (its value, rolling median or
    jump); None without a rule or while the rule does not judge."""
    note: str | None = None
    """Why the rule does not judge yet (``warm-up``, ``not judged: returns nearly
    constant``), or a band not yet persisted (``crit 1/2``)."""


@dataclass(frozen=True, slots=True)
class LogEntry:
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
    ]
    level: Level
    """HEALTHY for start/completed; WARNING or CRITICAL for trouble."""
    text: str
    ts: float | None = None
    seq: int | None = None
    update: int | None = None


def early_stop_text(p: PPOUpdatePayload) -> str:
    """The trainer's reason, else one built from the structured record, else a plain note."""
    if p.early_stop_reason:
        return p.early_stop_reason
    if p.early_stop is not None:
        return p.early_stop.describe()  # the trainer's own wording, defined once in telemetry
    return f"update {p.update} stopped early (no reason given)"


class TamiyoState:
    """The PPO policy's health: recent updates, early stops, drift and trust region."""

    def __init__(self, history_len: int = HISTORY_LEN, series_len: int = SERIES_LEN) -> None:
        self.latest: PPOUpdatePayload | None = None
        self.history: deque[PPOUpdatePayload] = deque(maxlen=history_len)
        self.series: deque[PPOUpdatePayload] = deque(maxlen=series_len)
        self.updates_seen = 0
        self.early_stops = 0
        self.last_early_stop_reason: str | None = None
        self.last_early_stop_update: int | None = None
        self.max_kl: float | None = None
        """``max_kl`` declared in ``run_started.config``; None when the run has none."""

    def record(self, payload: PPOUpdatePayload) -> None:
        """Fold one update in (the hot path: a few attribute writes and two appends)."""
        self.latest = payload
        self.history.append(payload)
        self.series.append(payload)
        self.updates_seen += 1
        if payload.early_stopped:
            self.early_stops += 1
            self.last_early_stop_reason = early_stop_text(payload)
            self.last_early_stop_update = payload.update

    def values(self) -> dict[str, float | None]:
        """Every metric of the latest update (empty before the first update)."""
        if self.latest is None:
            return {}
        row = msgspec.structs.astuple(self.latest)
        return {m: row[i] for m, i in zip(PPO_METRICS, PPO_METRIC_POSITIONS, strict=True)}

    def history_of(self, metric: str) -> tuple[float | None, ...]:
        """The last HISTORY_LEN values of ``metric``, oldest first (None = not measured)."""
        return tuple(getattr(p, metric) for p in self.history)

    @property
    def kl_divergence(self) -> float | None:
        """Issue 4's name for the latest ``approx_kl``; None before the first update."""
        return None if self.latest is None else self.latest.approx_kl

    @property
    def kl_divergence_history(self) -> tuple[float, ...]:
        """Issue 4's name for the ``approx_kl`` history: the last HISTORY_LEN values, oldest
        first (``history_of("approx_kl")``; approx_kl is required, so never None)."""
        return tuple(p.approx_kl for p in self.history)

    @property
    def policy_drift_rate(self) -> float | None:
        """Least-squares slope of approx_kl over the recent updates, nats per update."""
        return least_squares_slope([p.update for p in self.history], self.history_of("approx_kl"))

    @property
    def trust_region_health(self) -> float | None:
        """Latest approx_kl / the run's max_kl (1.0 = at the early-stop limit)."""
        if self.latest is None or self.max_kl is None:
            return None
        return self.latest.approx_kl / self.max_kl


_METRIC_GETTERS: Final = tuple((m, attrgetter(m)) for m in PPO_METRICS)
_UPDATE_GETTER: Final = attrgetter("update")


def metric_columns(
    payloads: Sequence[PPOUpdatePayload],
) -> tuple[tuple[int, ...], dict[str, tuple[float | None, ...]]]:
    """Update indices and one tuple per metric, cut from ``payloads`` column by column.

    One C-level ``map`` per column, and a few dozen objects per call rather than a tuple
    per row, which keeps the garbage collector out of long scans.
    """
    updates: tuple[int, ...] = tuple(map(_UPDATE_GETTER, payloads))
    return updates, {m: tuple(map(get, payloads)) for m, get in _METRIC_GETTERS}


def total_steps_of(config: Mapping[str, Any]) -> int | None:
    """Planned environment steps declared in ``config``, when it declares them."""
    for key in TOTAL_STEPS_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def max_kl_of(config: Mapping[str, Any]) -> float | None:
    """``max_kl`` from ``config`` when it is a positive finite number (early stop enabled)."""
    value = config.get("max_kl")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


Returns = TypeVar("Returns", bound=Sequence[float])
"""``deque[float]`` in the live state, ``tuple[float, ...]`` in its frozen snapshot."""


@dataclass(kw_only=True)
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
    status: RunPhase | None = None
    """None before any event; ``running`` until ``run_finished``."""
    reason: str | None = None
    started_ts: float | None = None
    last_event_ts: float | None = None
    finished_ts: float | None = None
    duration_seconds: float | None = None
    global_step: int | None = None
    total_steps: int | None = None
    updates: int = 0
    """``ppo_update`` events seen."""
    steps_per_second: float | None = None
    episodes: int = 0
    episode_return: float | None = None
    """Mean return of the latest rollout that finished an episode."""
    episode_return_min: float | None = None
    episode_return_max: float | None = None
    episode_length: float | None = None
    episode_returns: Returns
    """Mean returns of the last HISTORY_LEN rollouts that finished an episode, oldest first."""
    episode_return_series: Returns
    """The same for the last SERIES_LEN such rollouts."""
    anomalies_warning: int = 0
    anomalies_critical: int = 0
    events: int = 0
    last_seq: int | None = None
    seq_gaps: int = 0
    """Times ``seq`` jumped forward: events the log lost (should stay 0)."""
    foreign_events: int = 0
    """Events of another run id in this run's log, left out."""
    stalls: int = 0
    """Silences longer than the stall limit between two events of the unfinished run."""
    longest_stall: float | None = None
    """The longest such silence, in seconds."""
    first_stall_update: int | None = None
    """The update in progress during the first stall (the one after the last recorded)."""

    @property
    def progress(self) -> float | None:
        """Fraction of ``total_steps`` done, 0..1; None when the run declares no total."""
        if self.total_steps is None or self.global_step is None:
            return None
        return min(1.0, self.global_step / self.total_steps)

    def elapsed(self, now: float) -> float | None:
        """Seconds since ``run_started``: to ``now`` while running, to the finish after."""
        if self.started_ts is None:
            return None
        if self.duration_seconds is not None:
            return self.duration_seconds
        end = self.finished_ts if self.finished_ts is not None else now
        return max(0.0, end - self.started_ts)


@dataclass(kw_only=True)
class RunState(RunFacts["deque[float]"]):
    """The live run facts the aggregator writes (plain attribute writes on the hot path)."""

    episode_returns: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    episode_return_series: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_LEN))

    def snapshot(self) -> RunSnapshot:
        """A frozen copy: every field by name, the deques as tuples."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in values.items():
            if isinstance(value, deque):
                values[name] = tuple(value)
        return RunSnapshot(**values)


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
    recent: tuple[tuple[int, str, str], ...] = ()
    """Latest skipped lines as (line number, kind, detail), oldest first."""


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
    """Levels and verdict of the latest update."""
    return_direction: Trend
    """Which way the recent mean episode returns are going."""
    early_stops: int
    last_early_stop_reason: str | None
    policy_drift_rate: float | None
    trust_region_health: float | None
    max_kl: float | None
    log: tuple[LogEntry, ...]
    """Notable events, oldest first."""
    skipped: SkipCounts
    thresholds: Thresholds
    """The rule table in force: widgets draw thresholds from here, never from constants."""

    def metric(self, name: str) -> MetricSnapshot:
        """The snapshot of metric ``name`` (KeyError names unknown metrics)."""
        return self.metrics[name]

    @property
    def verdict(self) -> str:
        """The banner verdict, e.g. ``FAIL: KL (+2)``."""
        return self.health.verdict


def empty_snapshot(now: float, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> SanctumSnapshot:
    """The snapshot before any event: WAITING, every metric pending."""
    from sanctum.aggregator import SanctumAggregator  # local: the aggregator imports us

    return SanctumAggregator(thresholds).snapshot(now)


__all__ = [
    "EVENT_LOG_LEN",
    "HISTORY_LEN",
    "SERIES_LEN",
    "Connection",
    "LogEntry",
    "MetricSnapshot",
    "RunFacts",
    "RunSnapshot",
    "RunState",
    "SanctumSnapshot",
    "SkipCounts",
    "TamiyoState",
    "connection_of",
    "early_stop_text",
    "max_kl_of",
    "metric_columns",
    "total_steps_of",
]
