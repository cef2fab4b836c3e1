"""The aggregator over real event logs read by the real reader."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from sanctum.health.levels import Level
from sanctum.health.rule_judge import values_needed
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.checks import judge_rows
from sanctum.model.pace import PACE_MIN_INTERVALS
from sanctum.model.snapshot import Connection, SanctumSnapshot
from sanctum.model.state import HISTORY_LEN
from telemetry.eventlog import EventLogReader, ReadBatch, read_events
from telemetry.events import (
    Anomaly,
    AnomalyPayload,
    Event,
    Heartbeat,
    HeartbeatPayload,
    PPOUpdate,
    Rollout,
    RolloutPayload,
    RunFinished,
    RunFinishedPayload,
    RunStarted,
    RunStartedPayload,
    TrainerInfo,
)
from tests.sanctum.logs import (
    KL_CRITICAL,
    KL_HOLDS,
    T0,
    RunLog,
    early_stop_update,
    kl_breach,
    kl_spike,
    ppo_update,
    rollout,
    write_run,
)


def fold(path: Path, agg: SanctumAggregator | None = None) -> SanctumSnapshot:
    agg = agg or SanctumAggregator()
    for batch in EventLogReader(path).batches():
        agg.handle_batch(batch)
    return agg.snapshot(agg.run.last_event_ts or T0)


def test_healthy_finished_run(tmp_path: Path) -> None:
    snap = fold(write_run(tmp_path / "e.jsonl", updates=20))
    assert snap.connection is Connection.FINISHED
    assert snap.verdict == "OK"
    assert snap.update == 19
    run = snap.run
    assert (run.run_id, run.env_id, run.trainer, run.seed) == (
        "run-test",
        "CartPole-v1",
        "test-trainer 0.1",
        3,
    )
    assert (run.updates, run.global_step, run.total_steps, run.progress) == (20, 10240, 10240, 1)
    assert run.steps_per_second == 4000.0
    assert run.episodes == 40
    assert run.episode_return == 39.0
    assert run.episode_returns == tuple(float(20 + u) for u in range(10, 20))
    assert snap.max_kl == 0.03
    assert snap.trust_region_health == pytest.approx(0.005 / 0.03)
    assert snap.policy_drift_rate == pytest.approx(0.0)
    assert [e.kind for e in snap.timeline] == ["start", "finish"]
    assert snap.timeline[-1].level is Level.HEALTHY


def test_history_is_bounded_and_aligned(tmp_path: Path) -> None:
    snap = fold(
        write_run(tmp_path / "e.jsonl", updates=25, overrides=lambda u: {"approx_kl": u / 1000})
    )
    kl = snap.metric("approx_kl")
    assert len(kl.history) == HISTORY_LEN
    assert snap.history_updates == tuple(range(15, 25))
    assert kl.history == pytest.approx(tuple(u / 1000 for u in range(15, 25)))
    assert kl.series == pytest.approx(tuple(u / 1000 for u in range(25)))
    assert kl.value == pytest.approx(0.024)
    assert kl.trend == pytest.approx(0.001)
    assert snap.policy_drift_rate == pytest.approx(0.001)


def test_not_measured_stays_none_and_zero_stays_zero(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    clip_rule = DEFAULT_THRESHOLDS.rule("clip_fraction")
    assert clip_rule is not None
    updates = values_needed(clip_rule)  # the Clip rule judges its median from then on
    for u in range(updates):
        log.update(
            ppo_update(u, grad_norm=None, entropy=None, explained_variance=None, clip_fraction=0.0)
        )
    log.close()
    snap = fold(path)
    assert snap.metric("grad_norm").value is None
    assert snap.metric("grad_norm").level is Level.PENDING
    assert snap.metric("entropy").history == (None,) * updates
    assert snap.metric("clip_fraction").value == 0.0
    assert snap.metric("clip_fraction").level is Level.HEALTHY
    assert snap.connection is Connection.LIVE
    assert snap.verdict == "OK"


def test_critical_kl_and_nan(tmp_path: Path) -> None:
    kl = kl_breach(5 - KL_HOLDS)  # KL critical at the last update, 4

    def unhealthy(u: int) -> dict[str, float]:
        return {**kl(u), "value_loss": math.nan} if u == 4 else {**kl(u)}

    snap = fold(write_run(tmp_path / "e.jsonl", updates=5, overrides=unhealthy))
    assert snap.verdict == "FAIL: KL (+1)"
    assert snap.metric("approx_kl").level is Level.CRITICAL
    assert math.isnan(snap.metric("value_loss").value)  # type: ignore[arg-type]
    assert snap.metric("value_loss").level is Level.CRITICAL
    assert snap.health.fired == ("approx_kl", "value_loss")


def test_health_is_of_the_latest_update(tmp_path: Path) -> None:
    snap = fold(write_run(tmp_path / "e.jsonl", updates=12, overrides=kl_breach(5)))
    assert snap.verdict == "OK"  # the dashboard shows now; check judges the whole run
    assert snap.run_verdict.text == f"FAIL: KL {KL_HOLDS}x"
    kl = snap.metric("approx_kl").history
    assert max(kl) == KL_CRITICAL["approx_kl"]  # type: ignore[type-var]


def test_early_stops_and_anomalies_reach_the_event_log(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(ppo_update(0))
    log.update(early_stop_update(1))
    log.anomaly("critical", "grad_norm", math.inf, update=1)
    log.anomaly("warning", "ratio_max", 40.0, update=1)
    log.finish("failed", "RuntimeError: boom")
    log.close()
    snap = fold(path)
    assert snap.early_stops == 1
    assert snap.last_early_stop_reason is not None
    assert snap.last_early_stop_reason.startswith("approx_kl 0.0412 > max_kl 0.0300 at epoch 2")
    assert (snap.run.anomalies_critical, snap.run.anomalies_warning) == (1, 1)
    kinds = [(e.kind, e.level) for e in snap.timeline]
    assert kinds == [
        ("start", Level.HEALTHY),
        ("early_stop", Level.WARNING),
        ("anomaly", Level.CRITICAL),
        ("anomaly", Level.WARNING),
        ("finish", Level.CRITICAL),
    ]
    # spelled as the metric rows spell it (sanctum.formatting): +Inf, not Inf
    assert snap.timeline[2].text == "grad_norm = +Inf: optimizer step skipped: non-finite gradient"
    assert snap.timeline[1].update == 1
    assert snap.timeline[-1].text == "run failed: RuntimeError: boom"
    assert snap.connection is Connection.FAILED
    assert snap.run.reason == "RuntimeError: boom"


def test_early_stop_without_reason_uses_the_record(tmp_path: Path) -> None:
    agg = SanctumAggregator()
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(early_stop_update(0, early_stop_reason=None))
    log.close()
    snap = fold(path, agg)
    # the trainer's wording (EarlyStop.describe), not a second spelling of it
    assert snap.timeline[-1].text == (
        "approx_kl 0.0412 > max_kl 0.0300 at epoch 2 minibatch 3 (minibatch not applied)"
    )
    assert snap.last_early_stop_reason == snap.timeline[-1].text


def test_rollout_without_episodes_keeps_the_last_return(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.emit(RolloutPayload(update=1, global_step=2000, episodes=0))
    log.close()
    snap = fold(path)
    assert snap.run.episode_return == 20.0
    assert snap.run.episode_returns == (20.0,)
    assert snap.run.global_step == 2000


def test_unknown_fields_kinds_and_corrupt_lines(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    extra = {
        "type": "ppo_update",
        "run_id": "run-test",
        "seq": 4,
        "ts": T0 + 4,
        "payload": {
            "update": 1,
            "global_step": 1024,
            "approx_kl": 0.002,
            "clip_fraction": 0.1,
            "early_stopped": False,
            "new_metric": 7.5,
        },
    }
    log.raw(json.dumps(extra) + "\n")
    log.raw('{"type": "gpu_stats", "run_id": "run-test", "seq": 5, "ts": 1.0, "payload": {}}\n')
    log.raw("{not json\n")
    log.close()
    snap = fold(path)
    assert snap.update == 1
    assert snap.metric("approx_kl").value == 0.002
    assert snap.metric("grad_norm").value is None  # absent in that line: not measured
    assert (snap.skipped.malformed, snap.skipped.unknown_kind) == (1, 1)
    assert [line.line_no for line in snap.skipped.lines] == [5, 6]
    assert snap.timeline[-1].kind == "skipped"
    assert snap.timeline[-1].text.startswith("2 lines skipped from line 5")


def test_seq_gap_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.emitter._seq = iter(range(5, 100))  # type: ignore[assignment] # the log lost seq 2-4
    log.update(0)
    log.close()
    snap = fold(path)
    assert snap.run.seq_gaps == 1
    assert [e.text for e in snap.timeline if e.kind == "gap"] == ["3 events missing before seq 5"]


def test_truncated_log_resets_the_state(tmp_path: Path) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=5, overrides=kl_breach(5 - KL_HOLDS))
    agg = SanctumAggregator()
    reader = EventLogReader(path)
    for batch in reader.batches():
        agg.handle_batch(batch)
    assert agg.snapshot(T0).verdict == "FAIL: KL"
    path.write_text("")
    write_run(path, updates=2)
    for batch in reader.batches():
        agg.handle_batch(batch)
    snap = agg.snapshot(T0)
    assert snap.verdict == "PENDING"  # two updates: too few to judge, nothing kept from before
    assert snap.run.updates == 2
    assert snap.skipped.resets == 1
    assert any(e.kind == "reset" for e in snap.timeline)


def test_a_second_run_in_the_same_log_starts_over(tmp_path: Path) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=3, overrides=kl_breach(0), finish=None)
    log = RunLog(path, run_id="run-two")
    log.start()
    log.update(0)
    log.close()
    snap = fold(path)
    assert snap.run.run_id == "run-two"
    assert snap.run.updates == 1
    assert snap.verdict == "PENDING"  # one update: too few to judge, nothing kept of run one
    assert snap.run.events == 3


def test_stale_when_silent_while_running(tmp_path: Path) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=2, finish=None)
    agg = SanctumAggregator()
    fold(path, agg)
    last = agg.run.last_event_ts
    assert last is not None
    assert agg.snapshot(last + DEFAULT_THRESHOLDS.stale_seconds).connection is Connection.LIVE
    assert agg.snapshot(last + 10.5).connection is Connection.STALE


def test_snapshot_does_not_change_after_more_events(tmp_path: Path) -> None:
    agg = SanctumAggregator()
    healthy, breach = [0.001] * KL_HOLDS, [KL_CRITICAL["approx_kl"]] * KL_HOLDS
    for u in range(KL_HOLDS):
        agg.handle(
            PPOUpdate(run_id="r", seq=u, ts=float(u), payload=ppo_update(u, approx_kl=0.001))
        )
    before = agg.snapshot(0.0)
    for u in range(KL_HOLDS, 2 * KL_HOLDS):
        payload = ppo_update(u, **KL_CRITICAL)
        agg.handle(PPOUpdate(run_id="r", seq=u, ts=float(u), payload=payload))
    after = agg.snapshot(0.0)
    assert before.metric("approx_kl").history == tuple(healthy)
    assert before.verdict == "OK"
    assert after.metric("approx_kl").history == tuple(healthy + breach)
    assert after.verdict == "FAIL: KL"


def test_events_before_run_started_show_as_running(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.update(0)  # a log whose start was lost still shows what it has
    log.close()
    snap = fold(path)
    assert snap.connection is Connection.LIVE
    assert snap.run.run_id is None
    assert snap.update == 0


def test_a_silent_unfinished_run_stalls_live_and_a_recorded_gap_is_kept(tmp_path: Path) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=4, finish=None)  # updates 2 s apart
    agg = SanctumAggregator()
    reader = EventLogReader(path)
    agg.handle_batch(reader.read_new())
    last = agg.run.last_event_ts
    assert last is not None
    assert agg.pace.seconds == 2.0
    limit = agg.pace.stall_limit()
    assert limit == DEFAULT_THRESHOLDS.stall_seconds  # 10 x 2 s is under the floor
    live = agg.snapshot(last + limit)
    assert (live.verdict, live.run_verdict.word, live.run_verdict.so_far) == ("OK", "OK", True)
    silent = agg.snapshot(last + limit + 1)  # stalled, or cut off: judged as check judges it
    assert (silent.verdict, silent.run_verdict.text) == ("FAIL: Stall", "FAIL: unfinished")
    log = RunLog(path, run_id="run-test", t0=last + 130.0)  # the trainer comes back
    log.emitter._seq = iter(range(agg.run.events + 1, 100))  # type: ignore[assignment]
    log.update(4)
    log.close()
    agg.handle_batch(reader.read_new())
    snap = agg.snapshot(log.now)
    assert snap.verdict == "OK"  # not stalled now; the stall stays on record
    assert snap.run_verdict.text == "FAIL: Stall 1x"
    assert (snap.run.stalls, snap.run.first_stall_update) == (1, 4)
    assert snap.run.longest_stall == pytest.approx(131.0)
    stall = [e for e in snap.timeline if e.kind == "stall"]
    assert stall and stall[0].level is Level.CRITICAL
    assert stall[0].text == "stall: no event for 131 s during update 4, over the 120 s floor"


def test_a_run_without_a_pace_is_never_stalled_but_turns_unfinished(tmp_path: Path) -> None:
    """Before a few intervals between updates there is no pace to judge a silence by (a
    large model may load for minutes); a log silent past the floor is judged as cut off."""
    path = write_run(tmp_path / "e.jsonl", updates=1, finish=None)
    agg = SanctumAggregator()
    fold(path, agg)
    last = agg.run.last_event_ts
    assert last is not None and agg.pace.seconds is None and agg.pace.stall_limit() is None
    snap = agg.snapshot(last + 10_000)  # not judged yet (one update), and no stall either
    assert (snap.verdict, snap.run_verdict.text) == ("PENDING", "FAIL: unfinished")


def test_a_finished_run_never_stalls(tmp_path: Path) -> None:
    agg = SanctumAggregator()
    fold(write_run(tmp_path / "e.jsonl", updates=PACE_MIN_INTERVALS + 1), agg)
    assert agg.pace.seconds is not None  # a pace to judge a silence by, and none judged
    assert agg.snapshot(T0 + 10_000).verdict == "OK"


def test_an_impossible_value_is_a_bug_in_the_verdict_and_the_event_log(tmp_path: Path) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=3, overrides=kl_spike(2, -0.5))
    snap = fold(path)
    assert snap.verdict == "FAIL: Bug"
    bug = [e for e in snap.timeline if e.kind == "bug"]
    assert [e.text for e in bug] == [
        "logging bug: approx_kl -0.5 outside >= 0 (the k3 KL estimator is never negative; "
        'if this log\'s is signed, declare it: kl_estimator = "k1" in run_started.config, or in '
        "the import map)"
    ]
    assert bug[0].update == 2 and bug[0].level is Level.CRITICAL


def test_updates_going_backwards_are_a_bug(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(ppo_update(5))
    log.update(ppo_update(3))
    log.close()
    snap = fold(path)
    assert snap.verdict == "FAIL: Bug"
    assert any("update index 3 after 5" in e.text for e in snap.timeline)


def test_an_event_of_another_run_and_time_going_back_move_nothing(tmp_path: Path) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=3, finish=None)
    log = RunLog(path, run_id="someone-else", t0=0.0)  # ts 1.0: 54 years before the run
    log.heartbeat(10**9)
    log.close()
    agg = SanctumAggregator()
    fold(path, agg)
    last = agg.run.last_event_ts
    snap = agg.snapshot(last or 0.0)
    assert snap.run.foreign_events == 1 and snap.run.global_step == 3 * 512
    assert snap.connection is Connection.LIVE  # not "silent for 54 years"
    assert any(e.kind == "skipped" and "someone-else" in e.text for e in snap.timeline)
    assert snap.verdict == "OK"


def test_judging_does_not_depend_on_when_a_reader_asks(tmp_path: Path) -> None:
    """Three aggregators fed the same events agree: one asked for its snapshot and verdict
    after every event, one never until the end, one fed the log as one reader batch. An
    update before its run's run_started is judged by the table in force when it was folded,
    whoever asked first (the continuous run's form of the table has no Entropy rule)."""
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.update(0)  # before its run_started
    log.start(action_space="continuous")
    for u in range(1, 12):
        log.update(u, **({"approx_kl": -0.5} if u == 5 else {}))  # a logging bug
    log.finish()
    log.close()
    events = read_events(path).events
    asked, quiet, batched = SanctumAggregator(), SanctumAggregator(), SanctumAggregator()
    for event in events:
        asked.handle(event)
        asked.snapshot(event.ts)
        asked.run_verdict(event.ts)
        quiet.handle(event)
    batched.handle_batch(EventLogReader(path).read_new())
    now = events[-1].ts
    rows = judge_rows(quiet, Level.CRITICAL, allow_unfinished=False)
    assert [r.name for r in rows if r.rule] == list(DEFAULT_THRESHOLDS.metrics)
    snap = quiet.snapshot(now)
    assert snap.run_verdict.text == "FAIL: Bug 1x"
    for other in (asked, batched):
        assert judge_rows(other, Level.CRITICAL, allow_unfinished=False) == rows
        assert other.thresholds == quiet.thresholds
        seen = other.snapshot(now)
        assert (seen.run_verdict, seen.health, seen.metrics) == (
            snap.run_verdict,
            snap.health,
            snap.metrics,
        )


def _fold_state(agg: SanctumAggregator) -> str:
    """Everything the fold leaves that a view reads, as text (NaN equal to NaN)."""
    judge = agg.judge  # judges what is queued
    agg.pace.settle()
    tamiyo, pace = agg.tamiyo, agg.pace
    return repr(
        (
            agg.run.snapshot(),
            (tamiyo.latest, list(tamiyo.series), tamiyo.updates_seen, tamiyo.early_stops),
            tamiyo.last_early_stop_reason,
            agg.records,
            [entry for entry in agg.timeline if entry.kind != "bug"],
            (list(pace._intervals), pace._last, pace._stalled, pace.seconds),
            {m: (j.tally, j.latest, j.streak_warning) for m, j in judge.rules.items()},
            {m: vars(s) for m, s in judge.stats.items()},
            (judge.nonfinite_updates, judge.nonfinite_fields, judge.violations),
            agg.run_verdict(None),
        )
    )


def _random_events(rng: random.Random, run_id: str = "r") -> list[Event]:
    """A run's events with what the fold must notice now and then: a NaN in a rollout or
    an update, a seq lost or repeated, the clock going back or silent past the stall
    floor, an event of another run, an anomaly, an early stop, a rollout without episodes."""
    config = {"max_kl": 0.03, "early_stop_scope": "minibatch"}
    start = RunStartedPayload(trainer=TrainerInfo(name="t"), config=config)
    events: list[Event] = [RunStarted(run_id=run_id, seq=1, ts=T0, payload=start)]
    seq, ts, u = 1, T0, 0
    for _ in range(rng.randint(20, 140)):
        seq, ts = seq + 1, ts + rng.choice([0.5, 1.0, 1.5])
        odd = rng.random()
        if odd < 0.03:
            seq += rng.choice([1, -1, -3])  # one lost, or numbered again
        elif odd < 0.06:
            ts += rng.choice([-5.0, 500.0])  # back in time, or a stall
        elif odd < 0.08:
            ts = math.nan
        who = "other" if rng.random() < 0.02 else run_id
        r = rng.random()
        if r < 0.45:
            fields: dict[str, Any] = {"approx_kl": rng.choice([0.01, 0.02, 0.2])}
            if rng.random() < 0.03:
                fields["entropy"] = math.nan
            payload = early_stop_update(u) if rng.random() < 0.1 else ppo_update(u, **fields)
            events.append(PPOUpdate(run_id=who, seq=seq, ts=ts, payload=payload))
            u += 1
        elif r < 0.9:
            extra: dict[str, Any] = {"steps_per_second": 4000.0 + u, "episodes": rng.randint(1, 3)}
            if rng.random() < 0.1:
                extra = {"episodes": 0, "episode_return_mean": None, "steps_per_second": None}
            elif rng.random() < 0.03:
                extra = {"episode_return_max": rng.choice([math.nan, math.inf])}
            events.append(Rollout(run_id=who, seq=seq, ts=ts, payload=rollout(u, **extra)))
        elif r < 0.97:
            beat = HeartbeatPayload(global_step=(u + 1) * 64)
            events.append(Heartbeat(run_id=who, seq=seq, ts=ts, payload=beat))
        else:
            note = AnomalyPayload(severity="warning", metric="approx_kl", value=0.2, message="m")
            events.append(Anomaly(run_id=who, seq=seq, ts=ts, payload=note))
    if rng.random() < 0.5:
        done = RunFinishedPayload(status="completed", updates=u)
        events.append(RunFinished(run_id=run_id, seq=seq + 1, ts=ts + 1, payload=done))
    return events


def test_any_reader_batches_leave_the_state_one_event_at_a_time_leaves() -> None:
    """Random runs with every kind of irregularity, folded in random reader batches and one
    event per batch: the same state at the end, so the judge's batch paths (a steady
    batch's loops, a clean batch's one-pass checks) say what judging update by update
    says. Only where a logging bug's line lands in the timeline follows the batches."""
    rng = random.Random(41)
    for trial in range(150):
        events = _random_events(rng)
        batched, single, at = SanctumAggregator(), SanctumAggregator(), 0
        while at < len(events):
            size = rng.choice([1, 5, 40, 400])
            batched.handle_batch(ReadBatch(events[at : at + size]))
            at += size
        for event in events:
            single.handle_batch(ReadBatch([event]))
        assert _fold_state(batched) == _fold_state(single), trial


def _calls_of_a_frame(updates: int) -> int:
    """Function calls (Python and C) of one dashboard frame after ``updates`` updates: the
    next update folded, then the snapshot (its verdict rebuilt, the run having moved)."""
    config = {"max_kl": 0.03, "early_stop_scope": "minibatch"}
    start = RunStarted(
        run_id="r",
        seq=1,
        ts=T0,
        payload=RunStartedPayload(trainer=TrainerInfo(name="t"), config=config),
    )
    events = [
        PPOUpdate(run_id="r", seq=u + 2, ts=T0 + u + 1, payload=ppo_update(u))
        for u in range(updates)
    ]
    agg = SanctumAggregator()
    agg.handle_batch(ReadBatch([start, *events]))
    agg.snapshot(T0 + updates)
    frame = ReadBatch(
        [PPOUpdate(run_id="r", seq=updates + 2, ts=T0 + updates + 1, payload=ppo_update(updates))]
    )
    calls = 0

    def count(frame_: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        agg.handle_batch(frame)
        agg.snapshot(T0 + updates + 1)
    finally:
        sys.setprofile(None)
    return calls


def test_a_frame_costs_the_same_however_long_the_run() -> None:
    """A snapshot after one more update does the same work after 1,000 updates as after
    8,000 (no rebuild of anything the run's length grows: the verdict, the columns, the
    judge): counted in calls, which no machine's speed changes."""
    _calls_of_a_frame(10)  # what a first frame does once (a cache filled, an import)
    assert _calls_of_a_frame(1_000) == _calls_of_a_frame(8_000)


def test_a_handle_only_loop_that_reads_the_judge_keeps_the_pace_bounded() -> None:
    """The halt gate and a replay fold event by event with ``handle`` and read the judge as
    they go: the progress events the pace has not folded in stay few, however long the
    run (each reading of the judge folds them in)."""
    agg = SanctumAggregator()
    start = RunStartedPayload(trainer=TrainerInfo(name="t"), config={"max_kl": 0.03})
    agg.handle(RunStarted(run_id="r", seq=1, ts=T0, payload=start))
    most = 0
    for u in range(5_000):
        agg.handle(PPOUpdate(run_id="r", seq=u + 2, ts=T0 + u + 1, payload=ppo_update(u)))
        agg.judge  # noqa: B018 - what judge_rows and a snapshot do
        most = max(most, len(agg.pace.arrived))
    assert most <= 1
    assert agg.pace.seconds == 1.0
