"""State helpers and the frozen snapshot: slopes, config facts, connection, immutability."""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sanctum.health.levels import Level
from sanctum.metrics import FLOAT_METRICS, PPO_METRICS
from sanctum.model.aggregator import SanctumAggregator, empty_snapshot
from sanctum.model.snapshot import Connection, RunSnapshot, connection_of
from sanctum.model.state import (
    RunState,
    TamiyoState,
    early_stop_text,
    metric_columns,
)
from sanctum.model.trend import least_squares_slope
from telemetry.events import EarlyStop, PPOUpdatePayload
from tests.sanctum.logs import early_stop_update, ppo_update


def test_metrics_are_derived_from_the_contract() -> None:
    fields = set(PPOUpdatePayload.__struct_fields__)
    assert set(PPO_METRICS) <= fields
    assert {
        "approx_kl",
        "clip_fraction",
        "explained_variance",
        "grad_norm",
        "entropy",
        "update_seconds",
        "skipped_steps",
    } <= set(PPO_METRICS)
    # indices, flags, text and the nested record are not metrics
    assert not {"update", "global_step", "early_stopped", "early_stop_reason", "early_stop"} & set(
        PPO_METRICS
    )
    # schema 1.5: every metric may be absent (GRPO measures no approx_kl); a map of named
    # rewards is not a metric, the reward's figures are
    assert {"reward_std", "reward_zero_std_frac", "tokens", "logprob_gap"} <= set(PPO_METRICS)
    assert "reward_components" not in PPO_METRICS
    assert "skipped_steps" not in FLOAT_METRICS
    assert "entropy" in FLOAT_METRICS


def test_least_squares_slope() -> None:
    assert least_squares_slope([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0]) == pytest.approx(2.0)
    assert least_squares_slope([0, 1, 2], [0.0, 1.0, 0.5]) == pytest.approx(0.25)
    # not measured and non-finite points are left out, not read as zero
    assert least_squares_slope([0, 1, 2, 3], [1.0, None, math.nan, 4.0]) == pytest.approx(1.0)
    assert least_squares_slope([0], [1.0]) is None
    assert least_squares_slope([0, 1], [None, 2.0]) is None
    assert least_squares_slope([], []) is None


def run_snapshot(**changes: object) -> RunSnapshot:
    base = SanctumAggregator().snapshot(0.0).run
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_run_snapshot_is_a_frozen_copy_of_every_run_field() -> None:
    state = RunState()
    state.run_id, state.global_step, state.seq_gaps = "r", 512, 2
    state.episode_returns.extend([1.0, 2.0])
    state.episode_return_series.append(3.0)
    snap = state.snapshot()
    names = [f.name for f in dataclasses.fields(RunState)]
    assert names == [f.name for f in dataclasses.fields(RunSnapshot)]  # declared once
    for name in names:
        live = getattr(state, name)
        assert getattr(snap, name) == (tuple(live) if isinstance(live, deque) else live)
    assert (snap.episode_returns, snap.episode_return_series) == ((1.0, 2.0), (3.0,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.global_step = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        del snap.run_id
    state.global_step = 1024  # the live state moves on; the snapshot does not
    state.episode_returns.append(4.0)
    assert (snap.global_step, snap.episode_returns) == (512, (1.0, 2.0))


def test_connection_states() -> None:
    assert connection_of(run_snapshot(), 100.0, 10.0) is Connection.WAITING
    live = run_snapshot(status="running", last_event_ts=100.0)
    assert connection_of(live, 110.0, 10.0) is Connection.LIVE  # exactly 10 s: not yet stale
    assert connection_of(live, 110.001, 10.0) is Connection.STALE
    for status, state in [
        ("completed", Connection.FINISHED),
        ("failed", Connection.FAILED),
        ("interrupted", Connection.INTERRUPTED),
    ]:
        done = run_snapshot(status=status, last_event_ts=0.0)
        assert connection_of(done, 1e9, 10.0) is state  # a finished run never goes stale


def test_progress_and_elapsed() -> None:
    run = run_snapshot(global_step=250, total_steps=1000, started_ts=10.0)
    assert run.progress == 0.25
    assert run.elapsed(40.0) == 30.0
    assert run_snapshot(global_step=250).progress is None  # no declared total: unknown
    finished = run_snapshot(started_ts=10.0, finished_ts=20.0)
    assert finished.elapsed(1e9) == 10.0


def test_tamiyo_drift_and_trust_region() -> None:
    tamiyo = TamiyoState(history_len=3, series_len=5)
    assert tamiyo.policy_drift_rate is None
    assert tamiyo.trust_region_health is None
    for u in range(6):
        tamiyo.record(ppo_update(u, approx_kl=0.01 + 0.002 * u))
    assert tamiyo.history_of("approx_kl") == pytest.approx((0.016, 0.018, 0.020))
    assert len(tamiyo.series) == 5
    assert tamiyo.policy_drift_rate == pytest.approx(0.002)
    assert tamiyo.trust_region_health is None  # the run declared no max_kl
    tamiyo.max_kl = 0.04
    assert tamiyo.trust_region_health == pytest.approx(0.5)


def test_tamiyo_counts_early_stops() -> None:
    tamiyo = TamiyoState()
    tamiyo.record(ppo_update(0))
    tamiyo.record(early_stop_update(1))
    tamiyo.record(ppo_update(2))
    assert tamiyo.early_stops == 1
    assert tamiyo.last_early_stop_reason is not None
    assert tamiyo.last_early_stop_reason.startswith("approx_kl 0.0412 > max_kl 0.0300")


def test_tamiyo_kl_divergence_names_of_issue_4() -> None:
    tamiyo = TamiyoState(history_len=3)
    assert (tamiyo.kl_divergence, tamiyo.kl_divergence_history) == (None, ())
    for u in range(5):
        tamiyo.record(ppo_update(u, approx_kl=0.01 * (u + 1)))
    assert tamiyo.kl_divergence == pytest.approx(0.05)
    assert tamiyo.kl_divergence_history == pytest.approx((0.03, 0.04, 0.05))
    assert tamiyo.kl_divergence_history == tamiyo.history_of("approx_kl")
    with pytest.raises(AttributeError):
        tamiyo.kl_divergence = 1.0  # type: ignore[misc]  # read-only


def test_early_stop_text_from_the_record_is_the_trainers_wording() -> None:
    for applied in (False, True):
        record = EarlyStop(
            epoch=1, minibatch=0, kl=0.05, threshold=0.03, scope="minibatch", applied=applied
        )
        payload = ppo_update(7, early_stopped=True, early_stop=record)
        assert early_stop_text(payload) == record.describe()
    assert early_stop_text(ppo_update(7, early_stopped=True)) == (
        "update 7 stopped early (no reason given)"
    )
    reason = early_stop_update(2)
    assert early_stop_text(reason) == reason.early_stop_reason


def test_metric_columns_keep_none() -> None:
    updates, columns = metric_columns([ppo_update(4, entropy=None), ppo_update(5, entropy=0.5)])
    assert updates == (4, 5)
    assert columns["entropy"] == (None, 0.5)
    assert set(columns) == set(PPO_METRICS)
    assert metric_columns([]) == ((), {m: () for m in PPO_METRICS})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=12))
def test_series_columns_cut_as_they_grow_equal_a_cut_of_the_whole_series(
    batches: list[int],
) -> None:
    tamiyo = TamiyoState(series_len=7)
    update = 0
    for size in batches:  # a frame after each batch of updates, the window sliding past 7
        for _ in range(size):
            tamiyo.record(ppo_update(update, entropy=None if update % 3 else 0.1 * update))
            update += 1
        assert tamiyo.series_columns() == metric_columns(tamiyo.series)


def test_empty_snapshot_is_waiting_and_pending() -> None:
    snap = empty_snapshot(5.0)
    assert snap.connection is Connection.WAITING
    assert snap.verdict == "PENDING"
    assert snap.update is None
    kl = snap.metric("approx_kl")
    assert (kl.value, kl.history, kl.series, kl.level, kl.trend) == (
        None,
        (),
        (),
        Level.PENDING,
        None,
    )


def test_snapshot_is_frozen_and_holds_no_deques() -> None:
    agg = SanctumAggregator()
    for u in range(3):
        agg.tamiyo.record(ppo_update(u))
    snap = agg.snapshot(0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.update = 9  # type: ignore[misc]
    assert isinstance(snap.metrics, MappingProxyType)
    with pytest.raises(TypeError):
        snap.metrics["approx_kl"] = snap.metrics["entropy"]  # type: ignore[index]
    for value in [
        *dataclasses.astuple(snap.run),
        snap.timeline,
        snap.history_updates,
        snap.metric("entropy").history,
        snap.metric("entropy").series,
    ]:
        assert not hasattr(value, "append"), value
