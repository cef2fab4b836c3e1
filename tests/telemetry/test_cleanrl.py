"""The CleanRL helper: CleanRL's local variables (tensors, numpy values, floats) as events.

Episodes come from real Gymnasium vector envs, checked against the envs' own
``RecordEpisodeStatistics`` record; updates from real torch tensors and numpy values; the
log through a real Recorder, judged by ``sanctum check``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch

from sanctum.cli import main as sanctum_main
from telemetry import EarlyStop, PPOUpdate, Rollout, read_events
from telemetry.halting import TrainingHalted
from telemetry.integrations.cleanrl import (
    Episodes,
    as_float,
    config_of,
    episodes_in,
    record_update,
    recorder,
    update_payload,
)
from tests import processes
from tests.examples import EXAMPLES
from tests.schema_support import assert_valid_log
from tests.telemetry.halted_runs import assert_halted, gated


@dataclass
class Args:
    """The CleanRL settings the helper reads (CleanRL's ``Args`` has these and more)."""

    env_id: str = "CartPole-v1"
    seed: int = 1
    ent_coef: float = 0.01
    update_epochs: int = 4
    num_minibatches: int = 4
    target_kl: float | None = None


def vector_env(mode: gym.vector.AutoresetMode) -> gym.vector.SyncVectorEnv:
    def make() -> gym.Env[np.ndarray, int]:
        return gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"), buffer_length=1000)

    return gym.vector.SyncVectorEnv([make, make, make], autoreset_mode=mode)


@pytest.mark.parametrize(
    "mode", [gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP]
)
def test_episodes_are_those_the_envs_recorded(mode: gym.vector.AutoresetMode) -> None:
    envs = vector_env(mode)
    envs.reset(seed=3)
    envs.action_space.seed(3)
    episodes = Episodes()
    per_step = []
    for _ in range(300):
        *_, infos = envs.step(envs.action_space.sample())
        per_step.extend(episodes.add(infos))
    recorded = sorted(
        (float(r), float(n))
        for env in envs.envs
        for r, n in zip(env.return_queue, env.length_queue, strict=True)
    )
    envs.close()
    assert len(recorded) > 10
    assert sorted(zip(episodes.returns, episodes.lengths, strict=True)) == recorded
    assert sorted(per_step) == recorded  # add() returns what it kept
    assert episodes.drain()[0] and episodes.drain() == ([], [])


def test_episodes_from_gymnasium_0_29_final_info() -> None:
    # Gymnasium 0.29 wrote one info dict (or None) per env, each value an array of one
    final = np.array(
        [None, {"episode": {"r": np.array([12.0]), "l": np.array([12]), "t": np.array([0.1])}}],
        dtype=object,
    )
    assert episodes_in({"final_info": final, "_final_info": np.array([False, True])}) == [
        (12.0, 12.0)
    ]
    assert episodes_in({}) == []


def test_values_are_read_from_tensors_numpy_and_floats() -> None:
    assert as_float(torch.tensor(0.25)) == 0.25
    assert as_float(np.float32(0.5)) == 0.5
    assert as_float(np.array([3.0])) == 3.0
    assert as_float(2) == 2.0


def test_an_update_from_cleanrl_variables() -> None:
    payload = update_payload(
        update=3,
        global_step=2048,
        approx_kl=torch.tensor(0.0125),
        clipfracs=[0.1, 0.2, 0.3, 0.2],
        pg_loss=torch.tensor(-0.02),
        v_loss=torch.tensor(12.5),
        entropy_loss=torch.tensor(0.6),
        explained_var=np.float64(0.4),
        learning_rate=2.5e-4,
        epoch=3,
        args=Args(),
        action_count=2,
    )
    assert (payload.update, payload.global_step) == (3, 2048)
    assert payload.approx_kl == pytest.approx(0.0125)
    assert payload.clip_fraction == pytest.approx(0.2)
    assert payload.policy_loss == pytest.approx(-0.02)
    assert payload.value_loss == pytest.approx(12.5)
    assert payload.entropy == pytest.approx(0.6)
    assert payload.entropy_normalized == pytest.approx(0.6 / math.log(2))
    assert payload.entropy_coef == 0.01
    assert payload.explained_variance == pytest.approx(0.4)
    assert payload.learning_rate == 2.5e-4
    ran = (payload.epochs_completed, payload.minibatches_completed, payload.minibatches_planned)
    assert ran == (4, 16, 16)
    assert payload.early_stopped is False
    assert payload.early_stop is None


def test_return_targets_and_pre_clip_gradient_norms() -> None:
    returns = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    norms = [torch.tensor(0.25), torch.tensor(2.0), np.float32(1.0)]
    payload = update_payload(
        update=0,
        global_step=512,
        approx_kl=0.01,
        clipfracs=0.1,
        args=SimpleNamespace(max_grad_norm=0.5),
        returns=returns,
        grad_norms=norms,
    )
    assert payload.return_mean == pytest.approx(3.0)
    assert payload.return_std == pytest.approx(float(returns.std(unbiased=False)))
    assert payload.grad_norm == pytest.approx(3.25 / 3)
    assert payload.grad_norm_max == pytest.approx(2.0)
    assert payload.grad_clip_scale == pytest.approx((1.0 + 0.25 + 0.5) / 3)  # max_grad_norm 0.5
    nan = update_payload(
        update=1, global_step=1024, approx_kl=0.01, clipfracs=0.1, grad_norms=[1.0, math.nan]
    )
    assert math.isnan(nan.grad_norm) and math.isnan(nan.grad_norm_max)
    assert nan.grad_clip_scale is None and nan.return_std is None


def test_explained_variance_nan_is_not_measured() -> None:
    payload = update_payload(
        update=0, global_step=512, approx_kl=0.01, clipfracs=0.1, explained_var=np.nan
    )
    assert payload.explained_variance is None
    assert payload.entropy is None and payload.epochs_completed is None


def test_cleanrl_target_kl_break_is_an_early_stop() -> None:
    args = Args(target_kl=0.01)
    stopped = update_payload(
        update=5,
        global_step=3072,
        approx_kl=torch.tensor(0.0234),
        clipfracs=[0.3],
        epoch=1,
        args=args,
    )
    assert stopped.early_stopped is True
    assert stopped.early_stop == EarlyStop(
        epoch=1, minibatch=3, kl=pytest.approx(0.0234), threshold=0.01, scope="epoch", applied=True
    )
    assert stopped.early_stop_reason == (
        "approx_kl 0.0234 > target_kl 0.0100 at epoch 1 minibatch 3 "
        "(CleanRL: the epoch's last minibatch, applied)"
    )
    assert (stopped.epochs_completed, stopped.minibatches_completed) == (2, 8)
    # a break after the last epoch skips nothing; without target_kl nothing breaks
    assert not update_payload(
        update=0, global_step=1, approx_kl=0.5, clipfracs=[0.3], epoch=3, args=args
    ).early_stopped
    assert not update_payload(
        update=0, global_step=1, approx_kl=0.5, clipfracs=[0.3], epoch=0, args=Args()
    ).early_stopped


def test_config_names_cleanrl_settings_as_ours() -> None:
    assert config_of(Args(target_kl=0.02)) == {
        "env_id": "CartPole-v1",
        "seed": 1,
        "ent_coef": 0.01,
        "update_epochs": 4,
        "num_minibatches": 4,
        "target_kl": 0.02,
        "kl_estimator": "k3",
        "max_kl": 0.02,
        "early_stop_scope": "epoch",
    }
    plain = config_of({"target_kl": None, "device": torch.device("cpu")})
    assert plain == {"target_kl": None, "device": "cpu", "kl_estimator": "k3"}


def test_recorded_updates_make_a_log_sanctum_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    envs = vector_env(gym.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    episodes = Episodes()
    with recorder(Args(), "demo", run_dir=tmp_path) as rec:
        for update in range(3):
            for _ in range(100 if update < 2 else 0):  # the last rollout finishes nothing
                episodes.add(envs.step(envs.action_space.sample())[-1])
            record_update(
                rec,
                update=update,
                global_step=300 * (update + 1),
                approx_kl=torch.tensor(0.005),
                clipfracs=[0.05, 0.1],
                entropy_loss=torch.tensor(0.69),
                sps=1500,
                episodes=episodes,
                epoch=3,
                args=Args(),
                action_count=2,
            )
    envs.close()
    path = tmp_path / "demo" / "events.jsonl"
    assert_valid_log(path)
    events = read_events(path).events
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["RunStarted", *["Rollout", "PPOUpdate"] * 3, "RunFinished"]
    rollouts = [e.payload for e in events if isinstance(e, Rollout)]
    assert rollouts[0].episodes > 0 and rollouts[0].steps_per_second == 1500
    assert (rollouts[2].episodes, rollouts[2].episode_return_mean) == (0, None)
    assert [e.payload.update for e in events if isinstance(e, PPOUpdate)] == [0, 1, 2]
    assert events[0].payload.trainer.name == "cleanrl-ppo"
    capsys.readouterr()
    assert sanctum_main(["check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["updates"] == 3


def test_a_misspelt_keyword_is_refused_with_the_name_meant_and_nothing_written(
    tmp_path: Path,
) -> None:
    with recorder(Args(), "typo", run_dir=tmp_path) as rec:
        with pytest.raises(TypeError, match=r"'entropy' \(did you mean 'entropy_loss'\?\)"):
            record_update(  # type: ignore[call-arg]
                rec, update=0, global_step=8, approx_kl=0.01, clipfracs=[0.1], entropy=0.6
            )
        with pytest.raises(TypeError, match=r"update_payload\(\) missing .* 'update'"):
            update_payload(global_step=8, approx_kl=0.01, clipfracs=[0.1])  # type: ignore[call-arg]
    kinds = [type(e).__name__ for e in read_events(tmp_path / "typo" / "events.jsonl").events]
    assert kinds == ["RunStarted", "RunFinished"]


def test_the_helper_imports_neither_torch_nor_numpy() -> None:
    code = "import json, sys, telemetry.integrations.cleanrl; print(json.dumps(list(sys.modules)))"
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    roots = {m.split(".")[0] for m in json.loads(out.stdout)}
    assert {"torch", "numpy", "gymnasium", "sanctum"}.isdisjoint(roots)
    assert "msgspec" in roots


@pytest.mark.parametrize("script", ["cleanrl_ppo.py", "cleanrl_ppo_continuous.py"])
def test_an_example_without_tensorboard_names_the_extra_in_one_line(
    tmp_path: Path, script: str
) -> None:
    """A package named ``tensorboard`` that cannot be imported stands for the missing extra;
    the example says which extra to install, in one line, exit 2, and records nothing."""
    shim = tmp_path / "shim" / "tensorboard"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'tensorboard'\", name='tensorboard')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim.parent), *sys.path])}
    example = Path(__file__).resolve().parents[2] / "examples" / script
    result = processes.run(
        [sys.executable, str(example), "--total-timesteps", "64"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"{script}: CleanRL's TensorBoard logging needs the tensorboard extra: "
        "pip install 'sanctum-ppo[tensorboard]' (No module named 'tensorboard')"
    ]
    assert result.stdout == ""
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None,
    reason="needs the tensorboard extra: pip install 'sanctum-ppo[tensorboard]'",
)
def test_halt_on_critical_stops_the_cleanrl_example_at_the_update_the_gate_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CleanRL's ppo.py (the example, unchanged) at a learning rate 2,000x its own: the
    policy collapses to one action, the gate fails the Entropy rule, and record_update
    stops the loop by raising, the run finished failed naming the rule."""
    from telemetry.integrations import cleanrl

    gate = gated(monkeypatch, cleanrl, "recorder")  # what the example imports
    planned = 20
    argv = ["--total-timesteps", str(512 * planned), "--learning-rate", "0.5", "--no-cuda"]
    monkeypatch.setattr(sys, "argv", ["cleanrl_ppo.py", *argv, "--run-dir", str(tmp_path)])
    with pytest.raises(TrainingHalted, match=r"^halted: Entropy critical \("):
        runpy.run_path(str(EXAMPLES / "cleanrl_ppo.py"), run_name="__main__")
    (run,) = tmp_path.iterdir()
    assert assert_halted(run / "events.jsonl", planned) == gate.fired == ("Entropy",)
