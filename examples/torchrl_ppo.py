"""TorchRL's PPO tutorial loop (``ClipPPOLoss`` in the user's own loop), recorded for Sanctum.

The structure and settings of TorchRL's "Reinforcement Learning (PPO) with TorchRL" tutorial
(https://pytorch.org/rl/stable/tutorials/coding_ppo.html: a TanhNormal actor, GAE(0.99,
0.95), 10 epochs of minibatches of 64 over 1,000-frame batches, clip 0.2, lr 3e-4, gradient
norm clipped to 1.0), on gymnasium's Pendulum-v1 instead of MuJoCo's InvertedDoublePendulum
(no MuJoCo needed). The lines marked ``# record`` are all the recording. Needs the train and
torchrl extras::

    python examples/torchrl_ppo.py --batches 20
    sanctum check runs/torchrl-ppo-<time>

``main(argv)`` returns the run's directory (the tests run it in-process).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from telemetry.integrations import missing_extra

try:
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
    from torchrl.envs import (
        Compose,
        DoubleToFloat,
        GymEnv,
        RewardSum,
        StepCounter,
        Transform,
        TransformedEnv,
    )
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE
except ImportError as exc:  # one line and exit 2, no traceback
    missing_extra("torchrl", "the TorchRL example", exc)

from torchprobe.torchrl import TorchRLRecorder  # record


class NaNObservations(Transform):
    """Observations replaced by NaN from a given frame on (to see a failed run)."""

    def __init__(self, from_frame: int) -> None:
        super().__init__(in_keys=["observation"], out_keys=["observation"])
        self.from_frame, self.frames = from_frame, 0

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        self.frames += 1
        return torch.full_like(obs, math.nan) if self.frames > self.from_frame else obs

    def _reset(self, tensordict, tensordict_reset):  # type: ignore[no-untyped-def]
        return self._call(tensordict_reset)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--batches", type=int, default=20, help="collector batches (updates)")
    p.add_argument("--frames-per-batch", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--minibatch", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--clip-epsilon", type=float, default=0.2)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--cells", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--run-dir", default="runs")
    p.add_argument("--run-id", default=None)
    p.add_argument("--nan-observations-from", type=int, default=None, metavar="FRAME")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse(argv)
    torch.manual_seed(args.seed)
    transforms = [DoubleToFloat(), StepCounter(), RewardSum()]
    if args.nan_observations_from is not None:
        transforms.append(NaNObservations(args.nan_observations_from))
    env = TransformedEnv(GymEnv(args.env_id), Compose(*transforms))
    env.set_seed(args.seed)
    n_act = env.action_spec.shape[-1]
    actor_net = nn.Sequential(
        nn.LazyLinear(args.cells),
        nn.Tanh(),
        nn.LazyLinear(args.cells),
        nn.Tanh(),
        nn.LazyLinear(2 * n_act),
        NormalParamExtractor(),
    )
    policy = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        spec=env.action_spec,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
        return_log_prob=True,
    )
    value_net = nn.Sequential(
        nn.LazyLinear(args.cells),
        nn.Tanh(),
        nn.LazyLinear(args.cells),
        nn.Tanh(),
        nn.LazyLinear(1),
    )
    value = ValueOperator(value_net, in_keys=["observation"])
    policy(env.reset())
    value(env.reset())
    collector = Collector(
        env,
        policy,
        frames_per_batch=args.frames_per_batch,
        total_frames=args.frames_per_batch * args.batches,
    )
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(args.frames_per_batch), sampler=SamplerWithoutReplacement()
    )
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=value, average_gae=True)
    loss_module = ClipPPOLoss(
        policy,
        value,
        clip_epsilon=args.clip_epsilon,
        entropy_coeff=1e-4,
        critic_coeff=1.0,
        loss_critic_type="smooth_l1",
    )
    optim = torch.optim.Adam(loss_module.parameters(), args.learning_rate)
    with TorchRLRecorder(  # record
        loss_module,
        optim,
        run_dir=args.run_dir,
        run_id=args.run_id,
        env_id=args.env_id,
        seed=args.seed,
        config=vars(args),
        max_grad_norm=args.max_grad_norm,
    ) as rec:
        for data in collector:
            with rec.update(data):  # record
                for _ in range(args.epochs):
                    advantage(data)
                    buffer.extend(data.reshape(-1))
                    for _ in range(args.frames_per_batch // args.minibatch):
                        losses = loss_module(buffer.sample(args.minibatch))
                        rec.losses(losses)  # record
                        loss = (
                            losses["loss_objective"]
                            + losses["loss_critic"]
                            + losses["loss_entropy"]
                        )
                        loss.backward()
                        nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
                        optim.step()
                        optim.zero_grad()
    collector.shutdown()
    return rec.run_dir


if __name__ == "__main__":
    print(main())
