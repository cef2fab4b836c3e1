"""A plain PyTorch PPO loop (no RL library), measured by the probe and judged by Sanctum.

The lines marked ``# record`` are all the recording: the probe measures what the loop does
not compute (the update's KL, the clip fraction after it, the gradient norm before
clipping, entropy) from the policy's distribution and the optimizer, whatever the loop
does inside its update. Needs the train extra::

    python examples/probe_ppo.py --updates 40
    sanctum check runs/probe-ppo-<time>
    python examples/probe_ppo.py --env-id Pendulum-v1 --updates 40     # a Gaussian policy
    python examples/probe_ppo.py --nan-observations-from 5             # a run that fails

``main(argv)`` returns the run's directory (the tests run it in-process).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from telemetry import Recorder, TrainerInfo  # record
from telemetry.integrations.cleanrl import Episodes  # record
from torchprobe.probe import UpdateProbe  # record


class Agent(nn.Module):
    """An actor (categorical or diagonal Gaussian) and a critic, two small MLPs."""

    def __init__(self, observations: int, actions: int, continuous: bool) -> None:
        super().__init__()

        def mlp(out: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Linear(observations, 64),
                nn.Tanh(),
                nn.Linear(64, 64),
                nn.Tanh(),
                nn.Linear(64, out),
            )

        self.actor, self.critic, self.continuous = mlp(actions), mlp(1), continuous
        self.log_std = nn.Parameter(torch.zeros(actions)) if continuous else None

    def distribution(self, obs: torch.Tensor) -> Distribution:
        out = self.actor(obs)
        if self.log_std is None:
            return Categorical(logits=out)
        return Independent(Normal(out, self.log_std.exp().expand_as(out)), 1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="CartPole-v1")
    p.add_argument("--updates", type=int, default=40)
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--clip-range", type=float, default=0.2)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--run-dir", default="runs")
    p.add_argument("--run-id", default=None)
    p.add_argument(
        "--nan-observations-from",
        type=int,
        default=None,
        metavar="UPDATE",
        help="feed NaN observations from this update on (to see a failed run)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse(argv)
    torch.manual_seed(args.seed)
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make(args.env_id))] * args.num_envs
    )
    space = envs.single_action_space
    continuous = isinstance(space, gym.spaces.Box)
    n_obs = int(np.prod(envs.single_observation_space.shape))
    agent = Agent(n_obs, int(space.shape[0]) if continuous else int(space.n), continuous)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    probe = UpdateProbe(  # record
        agent.distribution,
        optimizer,
        clip_range=args.clip_range,
        max_grad_norm=args.max_grad_norm,
    )
    episodes = Episodes()  # record
    recorder = Recorder(  # record
        run_dir=args.run_dir,
        run_id=args.run_id,
        env_id=args.env_id,
        seed=args.seed,
        config={**vars(args), **probe.settings()},
        trainer=TrainerInfo(name="plain-pytorch"),
        action_space=space,  # a Box has no normalised entropy for the Entropy rule to judge
    )
    obs, _ = envs.reset(seed=args.seed)
    step = 0
    with recorder:  # record: a raise ends the run `failed`, with the error's line
        for update in range(args.updates):
            bad = args.nan_observations_from is not None and update >= args.nan_observations_from
            batch = rollout(agent, envs, obs, args, episodes, bad)
            obs = batch.pop("next_obs")
            step += args.num_envs * args.num_steps
            probe.rollout(recorder, step, episodes)  # record
            with probe.update(  # record
                recorder,
                batch["obs"],
                batch["actions"],
                global_step=step,
                old_log_probs=batch["log_probs"],
            ) as measured:
                policy_loss, value_loss = learn(agent, optimizer, batch, args)
                measured.losses(policy=policy_loss, value=value_loss)  # record
                measured.critic(batch["values"], batch["returns"])  # record
        if (ending := probe.ending()) is not None:  # record: a policy of NaN is no result
            recorder.finish(*ending)
    envs.close()
    return recorder.run_dir


def rollout(
    agent: Agent,
    envs: gym.vector.VectorEnv,
    obs: np.ndarray,
    args: argparse.Namespace,
    episodes: Episodes,
    bad: bool,
) -> dict[str, torch.Tensor]:
    """``num_steps`` steps of every env, with GAE(0.99, 0.95) returns."""
    keep: dict[str, list[torch.Tensor]] = {
        k: [] for k in ("obs", "actions", "log_probs", "values", "rewards", "dones")
    }
    for _ in range(args.num_steps):
        o = torch.as_tensor(obs, dtype=torch.float32)
        if bad:
            o = torch.full_like(o, math.nan)
        with torch.no_grad():
            dist = agent.distribution(o)
            action = dist.sample()
            keep["log_probs"].append(dist.log_prob(action))
            keep["values"].append(agent.value(o))
        obs, reward, term, trunc, infos = envs.step(action.numpy())
        episodes.add(infos)  # record
        keep["obs"].append(o)
        keep["actions"].append(action)
        keep["rewards"].append(torch.as_tensor(reward, dtype=torch.float32))
        keep["dones"].append(torch.as_tensor(term | trunc, dtype=torch.float32))
    with torch.no_grad():
        last = agent.value(torch.as_tensor(obs, dtype=torch.float32))
    values, rewards, dones = (torch.stack(keep[k]) for k in ("values", "rewards", "dones"))
    advantages = torch.zeros_like(rewards)
    gae = torch.zeros_like(last)
    for t in reversed(range(args.num_steps)):
        following = last if t == args.num_steps - 1 else values[t + 1]
        delta = rewards[t] + 0.99 * following * (1 - dones[t]) - values[t]
        gae = delta + 0.99 * 0.95 * (1 - dones[t]) * gae
        advantages[t] = gae
    flat = {k: torch.stack(v).flatten(0, 1) for k, v in keep.items()}
    flat["advantages"] = advantages.flatten()
    flat["returns"] = (advantages + values).flatten()
    flat["next_obs"] = obs
    return flat


def learn(
    agent: Agent,
    optimizer: torch.optim.Optimizer,
    b: dict[str, torch.Tensor],
    args: argparse.Namespace,
) -> tuple[float, float]:
    """The clipped-surrogate update: ``epochs`` passes over shuffled minibatches."""
    size = b["obs"].shape[0]
    per = size // args.minibatches
    policy_loss = value_loss = torch.zeros(())
    for _ in range(args.epochs):
        order = torch.randperm(size)
        for start in range(0, size, per):
            i = order[start : start + per]
            dist = agent.distribution(b["obs"][i])
            ratio = (dist.log_prob(b["actions"][i]) - b["log_probs"][i]).exp()
            adv = b["advantages"][i]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            clipped = ratio.clamp(1 - args.clip_range, 1 + args.clip_range)
            policy_loss = -torch.min(ratio * adv, clipped * adv).mean()
            value_loss = 0.5 * (agent.value(b["obs"][i]) - b["returns"][i]).pow(2).mean()
            loss = policy_loss + 0.5 * value_loss - 0.0 * dist.entropy().mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            optimizer.step()
    return float(policy_loss.detach()), float(value_loss.detach())


if __name__ == "__main__":
    print(main())
