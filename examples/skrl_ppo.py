"""skrl's PPO on Pendulum (its documented example's settings), recorded for Sanctum.

The models and settings of skrl's ``torch_gymnasium_pendulum_ppo.py`` example
(https://skrl.readthedocs.io, examples/gymnasium: 4 envs, rollouts of 1,024, 10 epochs of
32 minibatches, lr 1e-3 with KLAdaptiveLR(0.008), ratio clip 0.2, value clip 0.2, gradient
norm clip 0.5, running standard scalers), written for skrl 2.x; ``--env-id CartPole-v1``
swaps in a categorical policy. The line marked ``# record`` is all the recording. Needs the
train and skrl extras::

    python examples/skrl_ppo.py --timesteps 20000
    sanctum check runs/skrl-ppo-<time>

``main(argv)`` returns the run's directory (the tests run it in-process).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from telemetry.integrations import missing_extra

try:
    from skrl.agents.torch.ppo import PPO, PPO_CFG
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import CategoricalMixin, DeterministicMixin, GaussianMixin, Model
    from skrl.resources.preprocessors.torch import RunningStandardScaler
    from skrl.resources.schedulers.torch import KLAdaptiveLR
    from skrl.trainers.torch import SequentialTrainer
except ImportError as exc:  # one line and exit 2, no traceback
    missing_extra("skrl", "the skrl example", exc)

from torchprobe.skrl import SkrlRecorder  # record


def _mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(inputs, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, outputs)
    )


class GaussianPolicy(GaussianMixin, Model):
    def __init__(self, observation_space: Any, action_space: Any, device: Any) -> None:
        Model.__init__(
            self, observation_space=observation_space, action_space=action_space, device=device
        )
        GaussianMixin.__init__(self, clip_actions=True)
        self.net = _mlp(self.num_observations, self.num_actions)
        self.log_std_parameter = nn.Parameter(torch.zeros(self.num_actions))
        self.scale = float(action_space.high[0])

    def compute(self, inputs: dict[str, Any], role: str = "") -> Any:
        mean = self.scale * torch.tanh(self.net(inputs["observations"]))
        return mean, {"log_std": self.log_std_parameter}


class CategoricalPolicy(CategoricalMixin, Model):
    def __init__(self, observation_space: Any, action_space: Any, device: Any) -> None:
        Model.__init__(
            self, observation_space=observation_space, action_space=action_space, device=device
        )
        CategoricalMixin.__init__(self)
        self.net = _mlp(self.num_observations, int(action_space.n))

    def compute(self, inputs: dict[str, Any], role: str = "") -> Any:
        return self.net(inputs["observations"]), {}


class Value(DeterministicMixin, Model):
    def __init__(self, observation_space: Any, action_space: Any, device: Any) -> None:
        Model.__init__(
            self, observation_space=observation_space, action_space=action_space, device=device
        )
        DeterministicMixin.__init__(self)
        self.net = _mlp(self.num_observations, 1)

    def compute(self, inputs: dict[str, Any], role: str = "") -> Any:
        return self.net(inputs["observations"]), {}


class NaNObservations(gym.ObservationWrapper):  # type: ignore[type-arg]
    """Observations replaced by NaN from a given step on (to see a failed run)."""

    def __init__(self, env: gym.Env, from_step: int) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        self.from_step, self.steps = from_step, 0

    def observation(self, observation: Any) -> Any:
        self.steps += 1
        return observation * math.nan if self.steps > self.from_step else observation


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--timesteps", type=int, default=20_000, help="steps of each env")
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--rollouts", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--mini-batches", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--ratio-clip", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--run-dir", default="runs")
    p.add_argument("--run-id", default=None)
    p.add_argument("--nan-observations-from", type=int, default=None, metavar="STEP")
    return p.parse_args(argv)


def build(args: argparse.Namespace) -> tuple[PPO, SequentialTrainer]:
    """The agent and its trainer, as skrl's example builds them."""
    torch.manual_seed(args.seed)

    def make() -> gym.Env:  # type: ignore[type-arg]
        env = gym.make(args.env_id)
        if args.nan_observations_from is not None:
            env = NaNObservations(env, args.nan_observations_from)
        return env

    # skrl treats each step of a vector env as a transition: the autoreset step gymnasium 1.x
    # adds by default (NEXT_STEP) would be one; SAME_STEP resets within the last step
    same_step = gym.vector.AutoresetMode.SAME_STEP
    env = wrap_env(gym.vector.SyncVectorEnv([make] * args.num_envs, autoreset_mode=same_step))
    device = env.device
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    policy_class = CategoricalPolicy if discrete else GaussianPolicy
    models = {
        "policy": policy_class(env.observation_space, env.action_space, device),
        "value": Value(env.observation_space, env.action_space, device),
    }
    cfg = PPO_CFG(
        rollouts=args.rollouts,
        learning_epochs=args.epochs,
        mini_batches=args.mini_batches,
        discount_factor=0.9,
        gae_lambda=0.95,
        learning_rate=args.learning_rate,
        learning_rate_scheduler=KLAdaptiveLR,
        learning_rate_scheduler_kwargs={"kl_threshold": 0.008},
        grad_norm_clip=0.5,
        ratio_clip=args.ratio_clip,
        value_clip=0.2,
        entropy_loss_scale=0.0,
        value_loss_scale=0.5,
        kl_threshold=0,
        observation_preprocessor=RunningStandardScaler,
        observation_preprocessor_kwargs={"size": env.observation_space, "device": device},
        value_preprocessor=RunningStandardScaler,
        value_preprocessor_kwargs={"size": 1, "device": device},
    )
    cfg.experiment.write_interval = 0  # no TensorBoard files, no checkpoints
    cfg.experiment.checkpoint_interval = 0
    agent = PPO(
        models=models,
        memory=RandomMemory(memory_size=args.rollouts, num_envs=env.num_envs, device=device),
        cfg=cfg,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=device,
    )
    trainer = SequentialTrainer(
        env=env,
        agents=[agent],
        cfg={
            "timesteps": args.timesteps,
            "headless": True,
            "disable_progressbar": True,
            "close_environment_at_exit": False,  # main closes it: no atexit logging
        },
    )
    return agent, trainer


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse(argv)
    agent, trainer = build(args)
    with SkrlRecorder(  # record
        agent, run_dir=args.run_dir, run_id=args.run_id, env_id=args.env_id, seed=args.seed
    ) as rec:
        try:
            trainer.train()
        finally:
            trainer.env.close()
    return rec.run_dir


if __name__ == "__main__":
    print(main())
