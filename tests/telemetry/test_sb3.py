"""SanctumCallback: real Stable-Baselines3 PPO runs on CartPole-v1, recorded and judged.

Each figure is checked against what SB3 itself wrote to its logger (a capturing output
format), the episodes against the Monitor's own record, the update count against SB3's
``train()`` calls and the early stops against the minibatches SB3 evaluated.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main as sanctum_main
from telemetry import (
    Event,
    PPOUpdate,
    PPOUpdatePayload,
    Rollout,
    RunFinished,
    RunStarted,
    read_events,
)
from telemetry.halting import HALT_PREFIX
from tests.schema_support import assert_valid_log
from tests.telemetry.halted_runs import FiresAt, assert_halted

needs_sb3 = pytest.mark.skipif(
    importlib.util.find_spec("stable_baselines3") is None,
    reason="needs the sb3 extra: pip install 'sanctum-ppo[sb3]'",
)

STEPS, N_STEPS, BATCH = 4096, 256, 64
UPDATES = STEPS // N_STEPS
MAPPED = (
    "approx_kl",
    "clip_fraction",
    "entropy",
    "entropy_coef",
    "entropy_normalized",
    "policy_loss",
    "value_loss",
    "total_loss",
    "explained_variance",
    "learning_rate",
    "epochs_completed",
    "minibatches_completed",
    "minibatches_planned",
    "update_seconds",
)
"""Every ppo_update field the callback fills from what SB3 logs or counts."""
SMALL = {"n_steps": N_STEPS, "batch_size": BATCH, "seed": 0, "device": "cpu"}
"""PPO settings of every run here: 16 updates of 4 minibatches per epoch in 4096 steps."""


@dataclass
class Trained:
    """One recorded SB3 run and what SB3 itself reported about it."""

    path: Path
    events: list[Event]
    model: Any
    dumps: list[dict[str, Any]] = field(default_factory=list)
    """SB3's own log dumps, in order (each holds the previous train()'s figures)."""
    evaluated: list[int] = field(default_factory=list)
    """Minibatches SB3 evaluated in each train() call."""
    clipped: list[list[float]] = field(default_factory=list)
    """What each of SB3's clip_grad_norm_ calls returned (the norm before clipping), by
    train() call."""
    targets: list[tuple[float, float]] = field(default_factory=list)
    """Mean and standard deviation of the rollout buffer's returns at each train() call."""

    def of(self, kind: type[Any]) -> list[Any]:
        return [e.payload for e in self.events if isinstance(e, kind)]


def _train(run_dir: Path, run_id: str, log_interval: int | None, **settings: Any) -> Trained:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import KVWriter, Logger

    from telemetry.integrations.sb3 import SanctumCallback

    dumps: list[dict[str, Any]] = []

    class Capture(KVWriter):
        def write(self, key_values: dict[str, Any], key_excluded: Any, step: int = 0) -> None:
            dumps.append(dict(key_values))

    threads, clip = torch.get_num_threads(), torch.nn.utils.clip_grad_norm_
    torch.set_num_threads(1)
    try:
        model = PPO("MlpPolicy", "CartPole-v1", **{**SMALL, **settings})
        model.set_logger(Logger(folder=None, output_formats=[Capture()]))
        evaluated: list[int] = []
        clipped: list[list[float]] = []
        targets: list[tuple[float, float]] = []
        evaluate, train = model.policy.evaluate_actions, model.train

        def counting_evaluate(*args: Any) -> Any:
            evaluated[-1] += 1
            return evaluate(*args)

        def counting_train() -> None:
            evaluated.append(0)
            clipped.append([])
            returns = model.rollout_buffer.returns
            targets.append((float(returns.mean()), float(returns.std())))
            train()

        def reporting_clip(*args: Any, **kwargs: Any) -> Any:
            norm = clip(*args, **kwargs)
            clipped[-1].append(float(norm))
            return norm

        model.policy.evaluate_actions, model.train = counting_evaluate, counting_train
        torch.nn.utils.clip_grad_norm_ = reporting_clip
        with SanctumCallback(run_dir=run_dir, run_id=run_id) as callback:
            model.learn(STEPS, callback=callback, log_interval=log_interval)
    finally:
        torch.nn.utils.clip_grad_norm_ = clip
        torch.set_num_threads(threads)
    path = run_dir / run_id / "events.jsonl"
    return Trained(path, read_events(path).events, model, dumps, evaluated, clipped, targets)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    return _train(tmp_path_factory.mktemp("runs"), "plain", 1, n_epochs=4, ent_coef=0.01)


@pytest.fixture(scope="module")
def stopping(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    run_dir = tmp_path_factory.mktemp("runs")
    return _train(run_dir, "stopping", 3, n_epochs=10, learning_rate=1e-3, target_kl=0.002)


@needs_sb3
def test_config_and_trainer_recorded(plain: Trained, stopping: Trained) -> None:
    started = plain.of(RunStarted)[0]
    assert started.trainer.name == "stable-baselines3"
    assert (started.env_id, started.seed) == ("CartPole-v1", 0)
    config = started.config
    expected = {
        "algorithm": "PPO",
        "n_steps": N_STEPS,
        "batch_size": BATCH,
        "n_epochs": 4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "learning_rate": 3e-4,
        "n_envs": 1,
        "target_kl": None,
        "total_timesteps": STEPS,
        "kl_estimator": "k3",
        "policy": "ActorCriticPolicy",
    }
    assert {k: config[k] for k in expected} == expected
    assert "max_kl" not in config  # no early stop configured
    assert stopping.of(RunStarted)[0].config["max_kl"] == pytest.approx(0.003)


@needs_sb3
@pytest.mark.parametrize("run", ["plain", "stopping"])
def test_every_update_carries_every_mapped_field(run: str, request: pytest.FixtureRequest) -> None:
    trained: Trained = request.getfixturevalue(run)
    assert_valid_log(trained.path)
    for update in trained.of(PPOUpdate):
        missing = [name for name in MAPPED if getattr(update, name) is None]
        assert not missing, f"update {update.update} lacks {missing}"


@needs_sb3
def test_figures_are_what_sb3_logged(plain: Trained) -> None:
    updates: list[PPOUpdatePayload] = plain.of(PPOUpdate)
    # SB3 dumps update k's figures after rollout k + 1: the last update is never dumped
    logged = [d for d in plain.dumps if "train/approx_kl" in d]
    assert len(logged) == UPDATES - 1
    for ours, sb3 in zip(updates, logged, strict=False):
        assert ours.approx_kl == pytest.approx(sb3["train/approx_kl"])
        assert ours.clip_fraction == pytest.approx(sb3["train/clip_fraction"])
        assert ours.entropy == pytest.approx(-sb3["train/entropy_loss"])
        assert ours.policy_loss == pytest.approx(sb3["train/policy_gradient_loss"])
        assert ours.value_loss == pytest.approx(sb3["train/value_loss"])
        assert ours.explained_variance == pytest.approx(sb3["train/explained_variance"])
        assert ours.learning_rate == pytest.approx(sb3["train/learning_rate"])
        total = ours.policy_loss - 0.01 * ours.entropy + 0.5 * ours.value_loss
        assert ours.total_loss == pytest.approx(total)
        assert ours.entropy_normalized == pytest.approx(ours.entropy / math.log(2))
    ran = {(u.epochs_completed, u.minibatches_completed, u.minibatches_planned) for u in updates}
    assert ran == {(4, 16, 16)}
    assert not any(u.early_stopped for u in updates)


@needs_sb3
@pytest.mark.parametrize("run", ["plain", "stopping"])
def test_gradient_norms_are_those_before_sb3_clipped_them(
    run: str, request: pytest.FixtureRequest
) -> None:
    trained: Trained = request.getfixturevalue(run)
    updates: list[PPOUpdatePayload] = trained.of(PPOUpdate)
    assert len(updates) == len(trained.clipped)
    for ours, norms in zip(updates, trained.clipped, strict=True):
        assert norms, "every update applied at least one step here"
        assert ours.grad_norm == pytest.approx(sum(norms) / len(norms), rel=1e-5)
        assert ours.grad_norm_max == pytest.approx(max(norms), rel=1e-5)
        scale = sum(min(1.0, 0.5 / n) for n in norms) / len(norms)  # max_grad_norm 0.5
        assert ours.grad_clip_scale == pytest.approx(scale, rel=1e-5)
    assert any(max(norms) > 0.5 for norms in trained.clipped), "some norms were clipped"


@needs_sb3
def test_return_targets_are_the_rollout_buffers(plain: Trained) -> None:
    updates: list[PPOUpdatePayload] = plain.of(PPOUpdate)
    for ours, (mean, std) in zip(updates, plain.targets, strict=True):
        assert ours.return_mean == pytest.approx(mean)
        assert ours.return_std == pytest.approx(std)
        assert std > 0


@needs_sb3
@pytest.mark.parametrize("run", ["plain", "stopping"])
def test_last_update_recorded_once_per_train_call(run: str, request: pytest.FixtureRequest) -> None:
    trained: Trained = request.getfixturevalue(run)
    updates = trained.of(PPOUpdate)
    assert len(trained.evaluated) == UPDATES  # SB3's train() calls
    assert [u.update for u in updates] == list(range(UPDATES))
    assert updates[-1].global_step == STEPS
    assert isinstance(trained.events[-2], PPOUpdate)
    finished = trained.events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.payload.status, finished.payload.updates) == ("completed", UPDATES)


@needs_sb3
def test_episodes_are_the_monitors(plain: Trained) -> None:
    rollouts = plain.of(Rollout)
    assert [r.update for r in rollouts] == list(range(UPDATES))
    assert [r.global_step for r in rollouts] == [N_STEPS * (i + 1) for i in range(UPDATES)]
    monitor = plain.model.get_env().envs[0]
    returns = monitor.get_episode_rewards()
    assert sum(r.episodes for r in rollouts) == len(returns) > 0
    mean = sum(r.episode_return_mean * r.episodes for r in rollouts if r.episodes) / len(returns)
    assert mean == pytest.approx(sum(returns) / len(returns))
    for r in rollouts:
        assert r.steps_per_second > 0
        if r.episodes:
            assert r.episode_return_min <= r.episode_return_mean <= r.episode_return_max
            assert r.episode_length_mean == pytest.approx(r.episode_return_mean)  # CartPole


@needs_sb3
def test_target_kl_stops_recorded_where_they_happened(stopping: Trained) -> None:
    updates: list[PPOUpdatePayload] = stopping.of(PPOUpdate)
    stops = [u for u in updates if u.early_stopped]
    assert stops, "target_kl 0.002 stops some updates"
    for u, evaluated in zip(updates, stopping.evaluated, strict=True):
        assert u.minibatches_planned == 10 * 4
        if not u.early_stopped:
            assert u.minibatches_completed == evaluated == 40
            continue
        assert u.minibatches_completed == evaluated - 1  # the stopping one is not applied
        epoch, minibatch = divmod(u.minibatches_completed, 4)
        assert u.epochs_completed == epoch + 1
        assert u.early_stop_reason is not None
        assert "> 1.5 x target_kl 0.0020 = 0.0030" in u.early_stop_reason
        assert f"at epoch {epoch} minibatch {minibatch} " in u.early_stop_reason
        if u.early_stop is not None:
            assert (u.early_stop.epoch, u.early_stop.minibatch) == (epoch, 0)
            assert u.early_stop.kl > u.early_stop.threshold == pytest.approx(0.003)
    assert any(u.early_stop is not None for u in stops)


@needs_sb3
@pytest.mark.parametrize("run", ["plain", "stopping"])
def test_sanctum_check_judges_the_log(
    run: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    trained: Trained = request.getfixturevalue(run)
    code = sanctum_main(["check", str(trained.path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == report["exit_code"] == 0, report
    assert report["updates"] == UPDATES
    kl = next(row for row in report["rows"] if row["name"] == "approx_kl")
    assert kl["updates_measured"] == UPDATES


@needs_sb3
def test_a_run_that_raises_is_recorded_as_failed(tmp_path: Path) -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    from telemetry.integrations.sb3 import SanctumCallback

    class Explode(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps == 100:
                raise RuntimeError("env crashed")
            return True

    model = PPO(
        "MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu"
    )
    with pytest.raises(RuntimeError), SanctumCallback(run_dir=tmp_path, run_id="r") as cb:
        model.learn(1000, callback=[cb, Explode()])
    events = read_events(tmp_path / "r" / "events.jsonl").events
    assert [e.payload.update for e in events if isinstance(e, PPOUpdate)] == [0]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason == "RuntimeError: env crashed"


@needs_sb3
def test_other_algorithms_are_refused(tmp_path: Path) -> None:
    from stable_baselines3 import A2C

    from telemetry.integrations.sb3 import SanctumCallback

    model = A2C("MlpPolicy", "CartPole-v1", n_steps=8, device="cpu")
    with pytest.raises(TypeError, match="records PPO; got A2C"):
        model.learn(8, callback=SanctumCallback(run_dir=tmp_path))


def test_without_sb3_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # import fails, as uninstalled
    monkeypatch.delitem(sys.modules, "telemetry.integrations.sb3_callback", raising=False)
    from telemetry.integrations import sb3

    with pytest.raises(ModuleNotFoundError, match=r"pip install 'sanctum-ppo\[sb3\]'"):
        _ = sb3.SanctumCallback


@needs_sb3
def test_into_your_recorder_across_learn_calls(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    from telemetry import Recorder, TrainerInfo
    from telemetry.integrations.sb3 import SanctumCallback, hyperparameters

    model = PPO("MlpPolicy", "CartPole-v1", **{**SMALL, "n_steps": 64, "n_epochs": 1})
    config = hyperparameters(model, total_timesteps=256)
    mine = TrainerInfo(name="my-sb3-script")
    with Recorder(run_dir=tmp_path, run_id="mine", config=config, trainer=mine) as rec:
        callback = SanctumCallback(recorder=rec)
        model.learn(128, callback=callback)
        model.learn(128, callback=callback, reset_num_timesteps=False)
        assert not rec.finished  # the callback leaves your recorder open
    events = read_events(rec.path).events
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [(u.update, u.global_step) for u in updates] == [(i, 64 * (i + 1)) for i in range(4)]
    assert [type(e).__name__ for e in events].count("RunFinished") == 1
    assert events[0].payload.config["n_steps"] == 64


@needs_sb3
def test_halt_on_critical_stops_learn_at_the_update_the_gate_fails(tmp_path: Path) -> None:
    """A learning rate 2,000x SB3's collapses the policy to one action in a few updates:
    the gate fails the Entropy rule, and learn() returns at the next step, the run failed."""
    from stable_baselines3 import PPO

    from sanctum import HaltGate
    from telemetry.integrations.sb3 import SanctumCallback

    model = PPO(  # SMALL's settings, spelt out for the type checker
        "MlpPolicy", "CartPole-v1", n_steps=N_STEPS, batch_size=BATCH, seed=0, device="cpu",
        learning_rate=0.5,
    )  # fmt: skip
    halter = HaltGate(None, "critical")
    with SanctumCallback(run_dir=tmp_path, run_id="halted", halter=halter) as callback:
        model.learn(STEPS, callback=callback)
    path = tmp_path / "halted" / "events.jsonl"
    assert assert_halted(path, UPDATES) == halter.fired
    updates = [e.payload for e in read_events(path).events if isinstance(e, PPOUpdate)]
    assert model.num_timesteps == updates[-1].global_step + 1  # one step of the next rollout
    assert callback.halted is not None and callback.halted.startswith(HALT_PREFIX)


@needs_sb3
def test_a_halter_stops_learn_into_your_recorder_and_finishes_it(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    from telemetry import Recorder
    from telemetry.integrations.sb3 import SanctumCallback

    model = PPO(
        "MlpPolicy", "CartPole-v1", n_steps=64, batch_size=BATCH, seed=0, device="cpu", n_epochs=1
    )
    with Recorder(run_dir=tmp_path, run_id="mine") as rec:
        callback = SanctumCallback(recorder=rec, halter=FiresAt(1))
        model.learn(64 * 8, callback=callback)
        assert rec.finished  # the halted run is finished, yours too
    events = read_events(rec.path).events
    assert [e.payload.update for e in events if isinstance(e, PPOUpdate)] == [0, 1]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.payload.status, finished.payload.reason) == ("failed", "halted: test at 1")
