"""Tianshou's discrete PPO (its CartPole test's settings), recorded for Sanctum.

The networks and settings of Tianshou's ``test/discrete/test_ppo_discrete.py``
(https://github.com/thu-ml/tianshou: 20 envs, 2,000 env steps per collection, 10 repetitions
of minibatches of 64, lr 3e-4, eps_clip 0.2, max_grad_norm 0.5, hidden layers 64x64),
without its test envs; ``--env-id Pendulum-v1`` swaps in a Gaussian policy. The line marked
``# record`` is all the recording. Needs the train and tianshou extras::

    python examples/tianshou_ppo.py --epochs 2
    sanctum check runs/tianshou-ppo-<time>

``main(argv)`` returns the run's directory (the tests run it in-process).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from telemetry.integrations import missing_extra

try:
    from tianshou.algorithm import PPO
    from tianshou.algorithm.modelfree.reinforce import (
        DiscreteActorPolicy,
        ProbabilisticActorPolicy,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OnPolicyTrainerParams
    from tianshou.utils.net.common import ActorCritic, Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
    from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
except ImportError as exc:  # one line and exit 2, no traceback
    missing_extra("tianshou", "the Tianshou example", exc)

from torchprobe.tianshou import TianshouRecorder  # record


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
    p.add_argument("--env-id", default="CartPole-v1")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--epoch-num-steps", type=int, default=50_000)
    p.add_argument("--collection-steps", type=int, default=2000)
    p.add_argument("--repetitions", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-envs", type=int, default=20)
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--eps-clip", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=1626)
    p.add_argument("--run-dir", default="runs")
    p.add_argument("--run-id", default=None)
    p.add_argument("--nan-observations-from", type=int, default=None, metavar="STEP")
    return p.parse_args(argv)


def build(args: argparse.Namespace) -> tuple[PPO, Collector]:
    """The algorithm and its training collector, as Tianshou's test builds them."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    def make() -> gym.Env:  # type: ignore[type-arg]
        env = gym.make(args.env_id)
        if args.nan_observations_from is not None:
            env = NaNObservations(env, args.nan_observations_from)
        return env

    env = gym.make(args.env_id)
    envs = DummyVectorEnv([make for _ in range(args.num_envs)])
    envs.seed(args.seed)
    obs_shape = env.observation_space.shape
    policy: Any
    if isinstance(env.action_space, gym.spaces.Discrete):
        net = Net(state_shape=obs_shape, hidden_sizes=[64, 64])
        actor: Any = DiscreteActor(preprocess_net=net, action_shape=int(env.action_space.n))
        critic: Any = DiscreteCritic(preprocess_net=net)
        policy = DiscreteActorPolicy(
            actor=actor, dist_fn=torch.distributions.Categorical, action_space=env.action_space
        )
    else:
        actor = ContinuousActorProbabilistic(
            preprocess_net=Net(state_shape=obs_shape, hidden_sizes=[64, 64]),
            action_shape=env.action_space.shape,
            unbounded=True,
        )
        critic = ContinuousCritic(preprocess_net=Net(state_shape=obs_shape, hidden_sizes=[64, 64]))

        def gaussian(
            loc_scale: tuple[torch.Tensor, torch.Tensor],
        ) -> torch.distributions.Distribution:
            normal = torch.distributions.Normal(*loc_scale)
            return torch.distributions.Independent(normal, 1)

        policy = ProbabilisticActorPolicy(
            actor=actor, dist_fn=gaussian, action_space=env.action_space, action_scaling=True
        )
    for module in ActorCritic(actor, critic).modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.orthogonal_(module.weight)
            torch.nn.init.zeros_(module.bias)
    algorithm = PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=args.learning_rate),
        gamma=0.99,
        max_grad_norm=0.5,
        eps_clip=args.eps_clip,
        vf_coef=0.5,
        ent_coef=0.0,
        gae_lambda=0.95,
        advantage_normalization=False,
    )
    collector = Collector[CollectStats](
        algorithm, envs, VectorReplayBuffer(max(20_000, args.collection_steps), len(envs))
    )
    return algorithm, collector


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse(argv)
    algorithm, collector = build(args)
    with TianshouRecorder(  # record
        algorithm, run_dir=args.run_dir, run_id=args.run_id, env_id=args.env_id, seed=args.seed
    ) as rec:
        algorithm.run_training(
            OnPolicyTrainerParams(
                training_collector=collector,
                test_collector=None,
                max_epochs=args.epochs,
                epoch_num_steps=args.epoch_num_steps,
                update_step_num_repetitions=args.repetitions,
                test_step_num_episodes=0,
                batch_size=args.batch_size,
                collection_step_num_env_steps=args.collection_steps,
                show_progress=False,
            )
        )
    return rec.run_dir


if __name__ == "__main__":
    print(main())
