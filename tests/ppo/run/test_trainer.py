"""Trainer: event log contents, determinism, checkpoints/resume, Ctrl-C and sink failure."""

from __future__ import annotations

import errno
import itertools
import math
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import torch

from ppo.config import PPOConfig
from ppo.core.distributions import MaskedCategorical
from ppo.model import checkpoint
from ppo.model.inference import NumpyActor
from ppo.model.policy import ActionSpec, ActorCritic
from ppo.run.resume import config_from_checkpoint
from ppo.run.trainer import Progress, Trainer, TrainingStopped
from telemetry import eventlog
from telemetry.eventlog import read_events
from telemetry.events import (
    Anomaly,
    Heartbeat,
    PPOUpdate,
    Rollout,
    RunFinished,
    RunStarted,
    kind_of,
)
from tests.ppo import toy_envs

TIME_FIELDS = {
    "ts",
    "run_id",
    "host",
    "pid",
    "steps_per_second",
    "update_seconds",
    "duration_seconds",
}


def small(**overrides: Any) -> PPOConfig:
    base: dict[str, Any] = {
        "num_envs": 2,
        "num_steps": 32,
        "total_steps": 256,
        "hidden_sizes": (16,),
        "checkpoint_every": 2,
        "seed": 3,
    }
    return PPOConfig(**{**base, **overrides})


def strip_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items() if k not in TIME_FIELDS}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def comparable(path: Path) -> list[Any]:
    batch = read_events(path)
    assert batch.skipped == []
    return [
        strip_times(msgspec.to_builtins(e)) for e in batch.events if not isinstance(e, Heartbeat)
    ]


def test_run_writes_a_complete_valid_event_log(tmp_path: Path) -> None:
    cfg = small()
    result = Trainer(cfg, run_dir=tmp_path).run()
    batch = read_events(result.events_path)
    assert batch.skipped == [] and batch.reset is None
    kinds = [kind_of(type(e)) for e in batch.events if not isinstance(e, Heartbeat)]
    assert kinds == ["run_started"] + ["rollout", "ppo_update"] * 4 + ["run_finished"]
    started, finished = batch.events[0], batch.events[-1]
    assert isinstance(started, RunStarted) and isinstance(finished, RunFinished)
    assert started.payload.config == {**cfg.to_dict(), "device_used": "cpu"}
    assert started.payload.env_id == "CartPole-v1"
    assert started.payload.trainer.name == "sanctum-ppo" and started.payload.seed == 3
    assert finished.payload.status == "completed" and finished.payload.global_step == 256
    assert [e.seq for e in batch.events] == list(range(1, len(batch.events) + 1))
    updates = [e.payload for e in batch.events if isinstance(e, PPOUpdate)]
    assert [u.update for u in updates] == [0, 1, 2, 3]
    assert [u.global_step for u in updates] == [64, 128, 192, 256]
    rollouts = [e.payload for e in batch.events if isinstance(e, Rollout)]
    assert all(r.steps_per_second is not None and r.steps_per_second > 0 for r in rollouts)
    assert sum(r.episodes for r in rollouts) > 0
    assert (result.global_step, result.updates) == (256, 4)


def test_same_seed_and_config_give_identical_event_logs(tmp_path: Path) -> None:
    cfg = small(max_kl=0.02, kl_penalty_coefficient=0.1)
    first = Trainer(cfg, run_dir=tmp_path / "a").run()
    second = Trainer(cfg, run_dir=tmp_path / "b").run()
    assert comparable(first.events_path) == comparable(second.events_path)
    other = Trainer(small(seed=4), run_dir=tmp_path / "c").run()
    assert comparable(first.events_path)[2] != comparable(other.events_path)[2]


def test_a_cpu_copy_of_the_actor_refreshed_after_each_update_trains_as_the_views_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollout of a policy on a GPU acts with a CPU copy of the actor: refreshed after
    every update, the run is the one the CPU's views give, to the bit (forced on the CPU)."""
    cfg = small(device="cpu")
    views = Trainer(cfg, run_dir=tmp_path / "views").run()
    copies: list[NumpyActor] = []

    def copied(policy: ActorCritic) -> NumpyActor:
        copies.append(NumpyActor(policy, copy=True))
        return copies[-1]

    monkeypatch.setattr("ppo.rollout.collector.NumpyActor", copied)
    copy = Trainer(cfg, run_dir=tmp_path / "copy").run()
    assert len(copies) == 1 and copies[0].copied
    assert comparable(copy.events_path)[1:] == comparable(views.events_path)[1:]
    assert copy.checkpoint_path is not None
    final = torch.load(copy.checkpoint_path, weights_only=True)["model"]
    np.testing.assert_array_equal(copies[0].layers[0][0], final["actor.0.weight"].numpy().T)


def test_checkpoints_load_weights_only_and_resume_continues(tmp_path: Path) -> None:
    cfg = small()
    result = Trainer(cfg, run_dir=tmp_path).run()
    run = result.events_path.parent
    names = sorted(p.name for p in (run / "checkpoints").glob("*.pt"))
    assert names == ["latest.pt", "update_000002.pt", "update_000004.pt"]
    state = torch.load(run / "checkpoints" / "latest.pt", weights_only=True)
    assert state["counters"] == {"update": 4, "global_step": 256}
    assert config_from_checkpoint(run) == cfg
    longer = cfg.with_overrides(["total_steps=384"])
    resumed = Trainer(longer, run_dir=tmp_path / "resumed", resume=run).run()
    events = read_events(resumed.events_path).events
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.config["resumed_from"]["update"] == 4
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [(u.update, u.global_step) for u in updates] == [(4, 320), (5, 384)]
    again = Trainer(longer, run_dir=tmp_path / "again", resume=run).run()
    assert comparable(resumed.events_path)[1:] == comparable(again.events_path)[1:]


def test_resume_errors_name_the_run(tmp_path: Path) -> None:
    with pytest.raises(checkpoint.CheckpointError, match="no run at"):
        Trainer(small(), resume=tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint in"):
        Trainer(small(), resume=tmp_path / "empty")
    run = Trainer(small(), run_dir=tmp_path / "r").run().events_path.parent
    wider = small(hidden_sizes=(32,))
    with pytest.raises(checkpoint.CheckpointError, match="does not fit this config"):
        Trainer(wider, run_dir=tmp_path / "x", resume=run).run()


@pytest.mark.parametrize(
    ("remove", "named"),
    [
        (("agent",), "agent"),
        (("agent", "kl_coef"), "agent.kl_coef"),
        (("rng", "sampling"), "rng.sampling"),
    ],
)
def test_resume_from_a_checkpoint_missing_an_entry_names_the_entry_and_the_file(
    tmp_path: Path, remove: tuple[str, ...], named: str
) -> None:
    run = Trainer(small(), run_dir=tmp_path / "r").run().events_path.parent
    state = torch.load(run / "checkpoints" / "latest.pt", weights_only=True)
    *parents, key = remove
    holder = state
    for name in parents:
        holder = holder[name]
    del holder[key]
    broken = tmp_path / "broken.pt"
    torch.save(state, broken)
    with pytest.raises(checkpoint.CheckpointError) as info:
        Trainer(small(), run_dir=tmp_path / "x", resume=broken).run()
    assert str(info.value) == f"{broken}: checkpoint has no {named!r} entry"


def test_config_from_a_checkpoint_without_config_names_the_entry(tmp_path: Path) -> None:
    run = Trainer(small(), run_dir=tmp_path).run().events_path.parent
    latest = run / "checkpoints" / "latest.pt"
    state = torch.load(latest, weights_only=True)
    del state["config"]
    torch.save(state, latest)
    with pytest.raises(checkpoint.CheckpointError, match="checkpoint has no 'config' entry"):
        config_from_checkpoint(run)


def test_ctrl_c_saves_a_checkpoint_and_records_interrupted(tmp_path: Path) -> None:
    def interrupt(progress: Progress) -> None:
        if progress.updates_done == 2:
            raise KeyboardInterrupt

    trainer = Trainer(small(checkpoint_every=0), run_dir=tmp_path, on_progress=interrupt)
    with pytest.raises(KeyboardInterrupt):
        trainer.run()
    assert trainer.checkpoint_path is not None
    state = checkpoint.load(trainer.checkpoint_path)
    assert state["counters"] == {"update": 2, "global_step": 128}
    events = read_events(trainer.checkpoint_path.parent.parent / "events.jsonl").events
    last = events[-1]
    assert isinstance(last, RunFinished) and last.payload.status == "interrupted"


def test_request_stop_finishes_cleanly_as_interrupted(tmp_path: Path) -> None:
    trainer = Trainer(small(checkpoint_every=0), run_dir=tmp_path)
    trainer.on_progress = lambda p: trainer.request_stop("enough") if p.updates_done == 2 else None
    result = trainer.run()
    assert (result.updates, result.global_step) == (2, 128)
    assert checkpoint.load(result.checkpoint_path)["counters"] == {"update": 2, "global_step": 128}
    last = read_events(result.events_path).events[-1]
    assert isinstance(last, RunFinished)
    assert (last.payload.status, last.payload.reason) == ("interrupted", "enough")


def test_sink_failure_stops_with_checkpoint_and_names_file_and_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_append = eventlog.EventLogWriter._append  # every line, an event or a checked one
    calls = {"n": 0}

    def disk_fills_up(self: eventlog.EventLogWriter, fd: int, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] >= 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, fd, data)

    monkeypatch.setattr(eventlog.EventLogWriter, "_append", disk_fills_up)
    trainer = Trainer(small(checkpoint_every=0), run_dir=tmp_path)
    with pytest.raises(TrainingStopped) as info:
        trainer.run()
    message = str(info.value)
    events_path = next(tmp_path.glob("*/events.jsonl"))
    assert f"could not write the event log {events_path}" in message
    assert "No space left on device" in message and "checkpoint saved to" in message
    assert info.value.checkpoint_path is not None and info.value.checkpoint_path.is_file()
    assert read_events(events_path).skipped == []  # what was written is still whole


def test_heartbeats_during_rollout_and_update_carry_the_step_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_clock = itertools.count(start=0.0, step=10.0)  # every check sees 10 s passing
    monkeypatch.setattr(time, "monotonic", lambda: next(fake_clock))
    result = Trainer(small(heartbeat_seconds=5.0, total_steps=64), run_dir=tmp_path).run()
    events = read_events(result.events_path).events
    kinds = [kind_of(type(e)) for e in events]
    first_rollout, first_update = kinds.index("rollout"), kinds.index("ppo_update")
    during_rollout = [e for e in events[:first_rollout] if isinstance(e, Heartbeat)]
    during_update = [e for e in events[first_rollout:first_update] if isinstance(e, Heartbeat)]
    steps = [e.payload.global_step for e in during_rollout]
    assert steps == list(range(2, 66, 2))  # one per vector step of 2 envs (always due here)
    assert [e.payload.global_step for e in during_update] == [64] * 16  # one per minibatch


def test_masked_env_trains_without_taking_masked_actions(tmp_path: Path) -> None:
    toy_envs.register()  # the env raises if a masked action is ever taken
    cfg = small(env_id="ToyMasked-v0", total_steps=128, checkpoint_every=1)
    result = Trainer(cfg, run_dir=tmp_path).run()
    batch = read_events(result.events_path)
    assert batch.skipped == []
    assert not [e for e in batch.events if isinstance(e, Anomaly)]
    updates = [e.payload for e in batch.events if isinstance(e, PPOUpdate)]
    assert len(updates) == 2
    for u in updates:  # every step applied: masking must not make gradients NaN
        assert u.skipped_steps == 0 and u.minibatches_completed == u.minibatches_planned == 16
        assert u.grad_norm is not None and math.isfinite(u.grad_norm)
        assert u.entropy is not None and math.isfinite(u.entropy)
    checkpoints = result.events_path.parent / "checkpoints"
    first, last = (checkpoint.load(checkpoints / f"update_00000{i}.pt")["model"] for i in (1, 2))
    assert any(not torch.equal(first[k], last[k]) for k in first)  # update 2 moved the policy
    policy = ActorCritic(5, ActionSpec(discrete=True, n=5), cfg.hidden_sizes)
    policy.load_state_dict(last)
    mask = torch.rand(256, 5, generator=torch.Generator().manual_seed(0)) < 0.4
    mask[torch.arange(256), torch.randint(0, 5, (256,))] = True
    with torch.no_grad():  # the env's observation is its mask
        probs = MaskedCategorical(policy.actor(mask.float()), mask).probs
    assert bool((probs[~mask] == 0).all()) and bool(torch.isfinite(probs).all())


def test_continuous_env_trains(tmp_path: Path) -> None:
    result = Trainer(small(env_id="Pendulum-v1", total_steps=128), run_dir=tmp_path).run()
    updates = [
        e.payload for e in read_events(result.events_path).events if isinstance(e, PPOUpdate)
    ]
    assert len(updates) == 2 and all(u.entropy is not None for u in updates)


@pytest.mark.slow
def test_learning_cartpole_reaches_150_within_50k_steps(tmp_path: Path) -> None:
    reached: list[tuple[int, float]] = []

    def watch(p: Progress) -> None:
        if p.recent_return_mean is not None and p.global_step <= 50_000:
            reached.append((p.global_step, p.recent_return_mean))

    Trainer(PPOConfig(seed=1, total_steps=50_000), run_dir=tmp_path, on_progress=watch).run()
    best = max(r for _, r in reached)
    assert best >= 150, f"best rolling mean return {best:.1f} in 50k steps"
