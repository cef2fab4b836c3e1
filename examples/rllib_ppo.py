"""RLlib's PPO on a local Ray cluster (new API stack, torch), recorded for Sanctum.

RLlib's tuned CartPole PPO example's settings (``rllib/tuned_examples/ppo/cartpole_ppo.py``,
https://github.com/ray-project/ray: lr 3e-4, vf_loss_coeff 0.01, 6 epochs, a
[32] network with a separate value net), with two env runners; ``--env-id Pendulum-v1``
runs a Gaussian policy. The lines marked ``# record`` are all the recording. Needs the
train and rllib extras::

    python examples/rllib_ppo.py --iterations 20
    sanctum check runs/rllib-ppo-<time>

``main(argv)`` returns the run's directory (the tests run it in-process).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from telemetry.integrations import missing_extra

try:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env
except ImportError as exc:  # one line and exit 2, no traceback
    missing_extra("rllib", "the RLlib example", exc)

from telemetry.integrations.rllib import RLlibRecorder  # record


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
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--env-runners", type=int, default=2)
    p.add_argument("--train-batch-size", type=int, default=4000)
    p.add_argument("--minibatch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--run-dir", default="runs")
    p.add_argument("--run-id", default=None)
    p.add_argument("--nan-observations-from", type=int, default=None, metavar="STEP")
    return p.parse_args(argv)


def config_of(args: argparse.Namespace) -> PPOConfig:
    env: str = args.env_id
    if args.nan_observations_from is not None:
        env = "sanctum-nan-" + args.env_id
        start, base = args.nan_observations_from, args.env_id
        # the env runners (other processes) get the wrapper by value: this file is no module
        # they can import
        ray.cloudpickle.register_pickle_by_value(sys.modules[NaNObservations.__module__])
        register_env(env, lambda _: NaNObservations(gym.make(base), start))
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_env_runners=args.env_runners)
        .training(
            lr=args.learning_rate,
            vf_loss_coeff=0.01,
            num_epochs=args.epochs,
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=args.minibatch_size,
        )
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32], vf_share_layers=False))
        .debugging(seed=args.seed)
    )


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse(argv)
    started = not ray.is_initialized()
    if started:
        ray.init(include_dashboard=False, log_to_driver=False)
    config = config_of(args)
    try:
        with RLlibRecorder(  # record
            config, run_dir=args.run_dir, run_id=args.run_id, env_id=args.env_id
        ) as rec:
            algo = config.build_algo()
            try:
                for _ in range(args.iterations):
                    algo.train()
            finally:
                algo.stop()
    finally:
        if started:
            ray.shutdown()
    return rec.run_dir


if __name__ == "__main__":
    print(main())
