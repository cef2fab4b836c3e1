"""The live state of a run, owned and written by the aggregator.

:class:`TamiyoState` is the policy-health state: it keeps the PPO policy's updates
row-oriented: the last 600 payloads (the chart series), whose last 10 are the sparkline
history of *every* metric. A payload is already a frozen Struct, so recording an update
costs one deque append however many fields the contract grows; the per-metric columns are cut
when a snapshot asks, from the updates recorded since the last cut. Any metric's current
value and history are ``values()[metric]`` and ``history_of(metric)``; the KL record (value
plus its 10-update history) also has its product names (TELE-110), ``kl_divergence`` and
``kl_divergence_history``. ``None`` stays ``None`` all the way: "not measured" is never a
zero. :class:`RunState` holds the facts of the run as a whole. The frozen copies are in
:mod:`sanctum.model.snapshot`.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final

import msgspec

from sanctum.metrics import PPO_METRIC_POSITIONS, PPO_METRICS
from sanctum.model.snapshot import RunFacts, RunSnapshot
from sanctum.model.trend import least_squares_slope
from telemetry.events import PPOUpdatePayload

Columns = tuple[tuple[int, ...], dict[str, tuple[float | None, ...]]]
"""Update indices, and one tuple of values per metric (None: not measured)."""
HISTORY_LEN: Final = 10
"""Updates kept for sparklines and the drift rate."""
SERIES_LEN: Final = 600
"""Updates kept for charts."""
TIMELINE_LEN: Final = 200
"""Notable events kept for the timeline panel."""


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
        self.history_len = min(history_len, series_len)
        self.series: deque[PPOUpdatePayload] = deque(maxlen=series_len)
        """The last ``series_len`` updates (the last ``history_len`` are :attr:`history`)."""
        self.updates_seen = 0
        self.early_stops = 0
        self.last_early_stop_reason: str | None = None
        self.max_kl: float | None = None
        """``max_kl`` declared in ``run_started.config``; None when the run has none."""
        self._cut: Columns | None = None
        self._cut_seen = 0

    def record(self, payload: PPOUpdatePayload) -> None:
        """Fold one update in (the hot path: a few attribute writes and one append)."""
        self.latest = payload
        self.series.append(payload)
        self.updates_seen += 1
        if payload.early_stopped:
            self.early_stops += 1
            self.last_early_stop_reason = early_stop_text(payload)

    @property
    def history(self) -> tuple[PPOUpdatePayload, ...]:
        """The last ``history_len`` updates, oldest first (the tail of :attr:`series`)."""
        series = self.series
        return tuple(series[i] for i in range(max(0, len(series) - self.history_len), len(series)))

    def series_columns(self) -> Columns:
        """``metric_columns(self.series)``, cut only from the updates recorded since the
        last call: a snapshot a frame would otherwise copy 600 values of every metric."""
        new = self.updates_seen - self._cut_seen
        if self._cut is None or new >= len(self.series):
            self._cut = metric_columns(self.series)
        elif new > 0:
            fresh_updates, fresh = metric_columns(
                list(itertools.islice(reversed(self.series), new))[::-1]
            )
            updates, columns = self._cut
            drop = len(updates) + new - len(self.series)
            self._cut = (
                updates[drop:] + fresh_updates,
                {m: column[drop:] + fresh[m] for m, column in columns.items()},
            )
        self._cut_seen = self.updates_seen
        return self._cut

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
        """The KL record's value: the latest ``approx_kl``; None before the first update."""
        return None if self.latest is None else self.latest.approx_kl

    @property
    def kl_divergence_history(self) -> tuple[float | None, ...]:
        """The KL record's history: the last HISTORY_LEN ``approx_kl`` values, oldest
        first (``history_of("approx_kl")``; None where not measured, as in GRPO)."""
        return self.history_of("approx_kl")

    @property
    def policy_drift_rate(self) -> float | None:
        """Least-squares slope of approx_kl over the recent updates, nats per update."""
        return least_squares_slope([p.update for p in self.history], self.history_of("approx_kl"))

    @property
    def trust_region_health(self) -> float | None:
        """Latest approx_kl / the run's max_kl (1.0 = at the early-stop limit)."""
        if self.latest is None or self.latest.approx_kl is None or self.max_kl is None:
            return None
        return self.latest.approx_kl / self.max_kl


_UPDATE_POSITION: Final = PPOUpdatePayload.__struct_fields__.index("update")


def metric_columns(payloads: Sequence[PPOUpdatePayload]) -> Columns:
    """Update indices and one tuple per metric, cut from ``payloads``: each payload as a
    tuple of its fields, then transposed (two C-level passes, each reading a payload once;
    a ``map`` per metric read every payload once per metric, 15% slower over a 1M-event
    log: ``bench/sanctum_stages.py``'s ``cut``)."""
    if not payloads:
        return (), {m: () for m in PPO_METRICS}
    columns = list(zip(*map(msgspec.structs.astuple, payloads), strict=True))
    updates: tuple[int, ...] = columns[_UPDATE_POSITION]
    return updates, {m: columns[i] for m, i in zip(PPO_METRICS, PPO_METRIC_POSITIONS, strict=True)}


@dataclass(kw_only=True, slots=True)
class RunState(RunFacts["deque[float]"]):
    """The live run facts the aggregator writes (plain attribute writes on the hot path)."""

    episode_returns: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    episode_return_series: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_LEN))
    episode_return_updates: deque[int] = field(default_factory=lambda: deque(maxlen=SERIES_LEN))

    def snapshot(self) -> RunSnapshot:
        """A frozen copy: every field by name, the deques as tuples."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in values.items():
            if isinstance(value, deque):
                values[name] = tuple(value)
        return RunSnapshot(**values)
