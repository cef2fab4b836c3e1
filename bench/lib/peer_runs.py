"""Runs of the peers for the calibration corpus: Stable-Baselines3 and CleanRL's structure.

Stable-Baselines3 PPO is recorded through the shipped ``SanctumCallback``, with SB3's own
defaults or with RL Baselines3 Zoo's tuned hyperparameters applied as the zoo applies them
(``n_envs``, ``lin_`` schedules, ``VecNormalize`` with reward normalisation, gSDE,
``policy_kwargs``, batch and epoch counts). The zoo's numbers are copied from
``hyperparams/ppo.yml`` of DLR-RM/rl-baselines3-zoo (commit 00128b5d46d4); the scores they
reach, from its ``benchmark.md`` (commit 0088472b8cb6). MuJoCo settings there name the v3
environments; they are applied to v5 here (same dynamics, newer bindings).

CleanRL's structure is ``examples/cleanrl_ppo.py`` (discrete actions) and
``examples/cleanrl_ppo_continuous.py`` (continuous), run as the scripts they are.

Faults are injected the same way as in our trainer's corpus: a Gymnasium wrapper for the
environment faults (``env_faults.FaultWrapper``, per environment copy, from the
onset update's first step) and an SB3 callback for the agent faults (before the onset
update's rollout).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lib import EXAMPLES

ZOO_COMMIT = "00128b5d46d4"
BENCHMARK_COMMIT = "0088472b8cb6"

ZOO: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "n_envs": 8,
        "n_timesteps": 1e5,
        "n_steps": 32,
        "batch_size": 256,
        "gae_lambda": 0.8,
        "gamma": 0.98,
        "n_epochs": 20,
        "ent_coef": 0.0,
        "learning_rate": "lin_0.001",
        "clip_range": "lin_0.2",
    },
    "Pendulum-v1": {
        "n_envs": 4,
        "n_timesteps": 1e5,
        "n_steps": 1024,
        "gae_lambda": 0.95,
        "gamma": 0.9,
        "n_epochs": 10,
        "ent_coef": 0.0,
        "learning_rate": 1e-3,
        "clip_range": 0.2,
        "use_sde": True,
        "sde_sample_freq": 4,
    },
    "MountainCarContinuous-v0": {
        "normalize": True,
        "n_envs": 1,
        "n_timesteps": 20000,
        "batch_size": 256,
        "n_steps": 8,
        "gamma": 0.9999,
        "learning_rate": 7.77e-05,
        "ent_coef": 0.00429,
        "clip_range": 0.1,
        "n_epochs": 10,
        "gae_lambda": 0.9,
        "max_grad_norm": 5,
        "vf_coef": 0.19,
        "use_sde": True,
        "policy_kwargs": {"log_std_init": -3.29, "ortho_init": False},
    },
    "MountainCar-v0": {
        "normalize": True,
        "n_envs": 16,
        "n_timesteps": 1e6,
        "n_steps": 16,
        "gae_lambda": 0.98,
        "gamma": 0.99,
        "n_epochs": 4,
        "ent_coef": 0.0,
    },
    "Acrobot-v1": {
        "normalize": True,
        "n_envs": 16,
        "n_timesteps": 1e6,
        "n_steps": 256,
        "gae_lambda": 0.94,
        "gamma": 0.99,
        "n_epochs": 4,
        "ent_coef": 0.0,
    },
    "LunarLander-v3": {
        "n_envs": 16,
        "n_timesteps": 1e6,
        "n_steps": 1024,
        "batch_size": 64,
        "gae_lambda": 0.98,
        "gamma": 0.999,
        "n_epochs": 4,
        "ent_coef": 0.01,
    },
    "InvertedPendulum-v5": {
        "normalize": True,
        "n_envs": 1,
        "n_timesteps": 1e6,
        "batch_size": 64,
        "n_steps": 32,
        "gamma": 0.999,
        "learning_rate": 0.000222425,
        "ent_coef": 1.37976e-07,
        "clip_range": 0.4,
        "n_epochs": 5,
        "gae_lambda": 0.9,
        "max_grad_norm": 0.3,
        "vf_coef": 0.19816,
    },
    "InvertedDoublePendulum-v5": {
        "normalize": True,
        "n_envs": 1,
        "n_timesteps": 1e6,
        "batch_size": 512,
        "n_steps": 128,
        "gamma": 0.98,
        "learning_rate": 0.000155454,
        "ent_coef": 1.05057e-06,
        "clip_range": 0.4,
        "n_epochs": 10,
        "gae_lambda": 0.8,
        "max_grad_norm": 0.5,
        "vf_coef": 0.695929,
    },
    "Reacher-v5": {
        "normalize": True,
        "n_envs": 1,
        "n_timesteps": 1e6,
        "batch_size": 32,
        "n_steps": 512,
        "gamma": 0.9,
        "learning_rate": 0.000104019,
        "ent_coef": 7.52585e-08,
        "clip_range": 0.3,
        "n_epochs": 5,
        "gae_lambda": 1.0,
        "max_grad_norm": 0.9,
        "vf_coef": 0.950368,
    },
}
"""RL Zoo's tuned PPO hyperparameters (``hyperparams/ppo.yml``), per environment; the
zoo's LunarLander-v2 entry is applied to v3 and its MuJoCo v3 entries to v5."""


def zoo_settings(env_id: str, **changes: Any) -> dict[str, Any]:
    """The zoo's settings for ``env_id``, with ``changes`` (e.g. ``n_envs=1``)."""
    return {**ZOO[env_id], **changes}


def _schedule(value: Any) -> Any:
    """The zoo's ``lin_X``: X times the progress remaining (1 at the start, 0 at the end)."""
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return lambda remaining: remaining * start
    return value


def sb3_model_kwargs(settings: dict[str, Any]) -> dict[str, Any]:
    """PPO(...) keyword arguments from zoo-style settings (schedules made callables)."""
    skip = {"n_envs", "n_timesteps", "normalize", "policy", "env_wrapper"}
    kwargs = {k: _schedule(v) for k, v in settings.items() if k not in skip}
    return kwargs


class FaultCallback:
    """SB3 agent faults: ``lr_spike`` (the learning rate x factor from the onset update)
    and ``entropy_collapse`` (the action head x factor); applied before the onset update's
    rollout. Built lazily so this module imports without SB3."""

    def __new__(cls, fault: str, onset: int, factor: float) -> Any:  # type: ignore[misc]
        from stable_baselines3.common.callbacks import BaseCallback

        class _Fault(BaseCallback):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                self.rollouts = 0

            def _on_rollout_start(self) -> None:
                if self.rollouts == onset:
                    model = self.model
                    if fault == "lr_spike":
                        now = model.lr_schedule(model._current_progress_remaining)
                        model.lr_schedule = lambda _remaining: now * factor
                    elif fault == "entropy_collapse":
                        import torch

                        with torch.no_grad():
                            for param in model.policy.action_net.parameters():
                                param.mul_(factor)
                self.rollouts += 1

            def _on_step(self) -> bool:
                return True

        return _Fault()


def record_sb3(
    name: str,
    env_id: str,
    settings: dict[str, Any],
    seed: int,
    total_steps: int,
    run_dir: Path,
    fault: str | None = None,
    onset: int | None = None,
    fault_args: dict[str, Any] | None = None,
) -> Path:
    """Train SB3 PPO on ``env_id`` with ``settings`` and record it; return the events file."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from lib.env_faults import ENV_FAULTS, FaultWrapper
    from telemetry.integrations.sb3 import SanctumCallback

    torch.set_num_threads(1)
    fault_args = dict(fault_args or {})
    n_envs = int(settings.get("n_envs", 1))
    wrapper: Callable[..., Any] | None = None
    if fault in ENV_FAULTS:
        assert onset is not None
        n_steps = int(settings.get("n_steps", 2048))
        if fault == "stall":
            fault_args["token"] = f"{name}-sb3"
        start = onset * n_steps + 1

        def wrapper(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
            return FaultWrapper(env, fault, start, **fault_args)

    venv = make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrapper)
    kwargs = sb3_model_kwargs(settings)
    if settings.get("normalize"):
        venv = VecNormalize(venv, gamma=float(kwargs.get("gamma", 0.99)))
    model = PPO("MlpPolicy", venv, seed=seed, device="cpu", **kwargs)
    callbacks: list[Any] = []
    if fault in ("lr_spike", "entropy_collapse"):
        assert onset is not None
        callbacks.append(FaultCallback(fault, onset, float(fault_args["factor"])))
    try:
        with SanctumCallback(run_dir=run_dir, run_id=name, env_id=env_id) as recorder:
            model.learn(total_steps, callback=[*callbacks, recorder])
    except (ValueError, RuntimeError):
        if fault is None:
            raise
        # a broken run may stop on an error (NaN observations make SB3's policy raise):
        # the callback recorded it as failed, which is what the check judges
    venv.close()
    return run_dir / name / "events.jsonl"


def record_cleanrl(
    name: str,
    script: str,
    env_id: str,
    seed: int,
    total_steps: int,
    run_dir: Path,
    args: dict[str, Any] | None = None,
) -> Path:
    """Run a CleanRL-structure example as a script; return its events file."""
    scratch = run_dir / "cleanrl" / name
    command = [
        sys.executable,
        str(EXAMPLES / script),
        "--env-id",
        env_id,
        "--seed",
        str(seed),
        "--total-timesteps",
        str(total_steps),
        "--run-dir",
        str(scratch),
        "--no-cuda",
    ]
    for key, value in (args or {}).items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    import os

    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **env}, timeout=3600
    )
    (found,) = scratch.glob("*/events.jsonl")
    target = run_dir / name
    target.mkdir(parents=True, exist_ok=True)
    found.replace(target / "events.jsonl")
    return target / "events.jsonl"


def final_return(events: Path) -> float | None:
    """The run's final return as the project defines it (the last 20 episodes or more)."""
    import json

    from sanctum.reports.return_curve import final_return as last_episodes
    from sanctum.reports.return_curve import read_curve

    with events.open("rb") as fh:
        run_id = json.loads(fh.readline())["run_id"]
    return last_episodes(read_curve(events, run_id))
