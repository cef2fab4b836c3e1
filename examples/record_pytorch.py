"""Record your own PPO trainer with telemetry.Recorder, then watch and gate it with Sanctum.

A deliberately small PPO for CartPole in plain PyTorch and Gymnasium, written without the
``ppo`` package: the point is the lines marked ``# record``, which are all your trainer
needs. Needs only the train extra (torch, gymnasium):

    python examples/record_pytorch.py                     # 10 to 20 s on one core
    sanctum runs/pytorch-demo                             # from another terminal, live
    sanctum check runs/pytorch-demo                       # the CI gate: exit 0, 1 or 2

It reports the five required ``ppo_update`` fields (update, global_step, approx_kl,
clip_fraction, early_stopped) plus a few more. What it leaves out (``kl_final``, the
ratio statistics, ...) Sanctum shows as "not measured", never as zero.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from telemetry import EarlyStop, PPOUpdatePayload, Recorder, RolloutPayload, TrainerInfo

GAMMA, LAM, CLIP, EPOCHS, MINIBATCHES, MAX_KL, VF_COEF = 0.95, 0.95, 0.2, 4, 4, 0.03, 0.1
LR = 1e-3
"""Start of the learning rate, annealed linearly to 0 over the run."""


@dataclass
class Rollout:
    obs: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    episode_returns: list[float]


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def mlp(out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, out)
    )


def collect(
    env: gym.Env, obs: np.ndarray, actor: nn.Module, critic: nn.Module, steps: int, ep: list[float]
) -> tuple[np.ndarray, Rollout]:
    """``steps`` transitions from ``env``; ``ep[0]`` carries the running episode's return."""
    transitions: list[tuple[Any, ...]] = []
    finished: list[float] = []
    for _ in range(steps):
        x = torch.as_tensor(obs, dtype=torch.float32)
        with torch.no_grad():
            dist = torch.distributions.Categorical(logits=actor(x))
            action, value = dist.sample(), critic(x).item()
        obs, reward, terminated, truncated, _ = env.step(action.item())
        ep[0] += float(reward)
        if truncated and not terminated:  # time limit: bootstrap, the episode would go on
            with torch.no_grad():
                reward += GAMMA * critic(torch.as_tensor(obs, dtype=torch.float32)).item()
        done = terminated or truncated
        transitions.append((x, action, dist.log_prob(action), float(reward), value, done))
        if done:
            finished.append(ep[0])
            ep[0] = 0.0
            obs, _ = env.reset()
    xs, actions, logps, rewards, values, dones = zip(*transitions, strict=True)
    with torch.no_grad():
        next_value = critic(torch.as_tensor(obs, dtype=torch.float32)).item()
    advantages = gae(rewards, values, dones, next_value)
    returns = advantages + torch.tensor(values)
    rollout = Rollout(
        torch.stack(xs), torch.stack(actions), torch.stack(logps), advantages, returns, finished
    )
    return obs, rollout


def gae(
    rewards: tuple[float, ...],
    values: tuple[float, ...],
    dones: tuple[bool, ...],
    next_value: float,
) -> torch.Tensor:
    """Generalized advantage estimation (Schulman et al. 2016), walking back in time."""
    advantages, last = [0.0] * len(rewards), 0.0
    for t in reversed(range(len(rewards))):
        after = next_value if t == len(rewards) - 1 else values[t + 1]
        alive = 0.0 if dones[t] else 1.0
        delta = rewards[t] + GAMMA * after * alive - values[t]
        advantages[t] = last = delta + GAMMA * LAM * alive * last
    return torch.tensor(advantages)


def minibatch_step(
    actor: nn.Module, critic: nn.Module, optim: torch.optim.Optimizer, r: Rollout, mb: torch.Tensor
) -> tuple[float, float, float, float]:
    """One clipped-surrogate step; returns (approx_kl, clip_fraction, entropy, grad_norm)."""
    dist = torch.distributions.Categorical(logits=actor(r.obs[mb]))
    log_ratio = dist.log_prob(r.actions[mb]) - r.logp[mb]
    ratio = log_ratio.exp()
    adv = (r.advantages[mb] - r.advantages[mb].mean()) / (r.advantages[mb].std() + 1e-8)
    policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - CLIP, 1 + CLIP) * adv).mean()
    value_loss = (critic(r.obs[mb]).squeeze(-1) - r.returns[mb]).pow(2).mean()
    entropy = dist.entropy().mean()
    optim.zero_grad()
    (policy_loss + VF_COEF * value_loss - 0.01 * entropy).backward()
    params = [*actor.parameters(), *critic.parameters()]
    grad_norm = nn.utils.clip_grad_norm_(params, 0.5).item()  # the norm before clipping
    optim.step()
    # k3 estimator of KL(old || new), measured before the step (Schulman, "Approximating KL")
    kl = ((ratio - 1) - log_ratio).mean().item()
    clipped = ((ratio - 1).abs() > CLIP).float().mean().item()
    return kl, clipped, entropy.item(), grad_norm


def update(
    actor: nn.Module, critic: nn.Module, optim: torch.optim.Optimizer, r: Rollout
) -> tuple[list[tuple[float, float, float, float]], EarlyStop | None]:
    """PPO epochs over minibatches; stops after an epoch whose mean KL passes MAX_KL."""
    rows: list[tuple[float, float, float, float]] = []
    for epoch in range(EPOCHS):
        epoch_rows = [
            minibatch_step(actor, critic, optim, r, mb)
            for mb in torch.randperm(len(r.obs)).split(len(r.obs) // MINIBATCHES)
        ]
        rows += epoch_rows
        epoch_kl = mean([row[0] for row in epoch_rows])
        if epoch_kl > MAX_KL:  # CleanRL-style check of the epoch mean: its steps were applied
            stop = EarlyStop(
                epoch=epoch,
                minibatch=MINIBATCHES - 1,
                kl=epoch_kl,
                threshold=MAX_KL,
                scope="epoch",
                applied=True,
            )
            return rows, stop
    return rows, None


def update_payload(
    rows: list[tuple[float, float, float, float]],
    stop: EarlyStop | None,
    r: Rollout,
    index: int,
    step: int,
    lr: float,
) -> PPOUpdatePayload:
    """The event for one update: the required fields, then what this trainer measures."""
    kls, clips, entropies, grad_norms = (list(column) for column in zip(*rows, strict=True))
    variance = r.returns.var().item()
    reason = (
        None
        if stop is None
        else f"approx_kl {stop.kl:.4f} > max_kl {MAX_KL} after epoch {stop.epoch}"
    )
    return PPOUpdatePayload(
        update=index,
        global_step=step,
        approx_kl=mean(kls),
        clip_fraction=mean(clips),
        early_stopped=stop is not None,
        early_stop=stop,
        early_stop_reason=reason,
        approx_kl_max=max(kls),
        entropy=mean(entropies),
        grad_norm=mean(grad_norms),
        learning_rate=lr,
        # 1 - Var(R - V) / Var(R), and R - V is the advantage
        explained_variance=None if variance == 0 else 1 - r.advantages.var().item() / variance,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=40_000)
    parser.add_argument("--steps-per-update", type=int, default=2048)
    parser.add_argument("--run-dir", default="runs")
    parser.add_argument("--run-id", default="pytorch-demo")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread is fastest for an MLP this small
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    actor, critic = mlp(2), mlp(1)
    optim = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=LR)
    updates = args.total_steps // args.steps_per_update
    total = updates * args.steps_per_update  # Sanctum's progress bar reads total_steps
    config = {"total_steps": total, "max_kl": MAX_KL, "learning_rate": LR, "gamma": GAMMA}
    with Recorder(  # record: writes run_started now and run_finished at the end
        run_dir=args.run_dir,
        run_id=args.run_id,
        env_id="CartPole-v1",
        seed=0,
        config=config,
        trainer=TrainerInfo(name="record_pytorch example", version="1"),
    ) as rec:
        print(f"recording to {rec.path}; watch it with: sanctum {rec.run_dir}")
        step, ep, started = 0, [0.0], time.perf_counter()
        for index in range(updates):
            lr = LR * (1 - index / updates)
            optim.param_groups[0]["lr"] = lr
            obs, rollout = collect(env, obs, actor, critic, args.steps_per_update, ep)
            step += args.steps_per_update
            done = rollout.episode_returns
            rec.emit(
                RolloutPayload(  # record: what the rollout achieved
                    update=index,
                    global_step=step,
                    episodes=len(done),
                    episode_return_mean=sum(done) / len(done) if done else None,
                    steps_per_second=step / (time.perf_counter() - started),
                )
            )
            rows, stop = update(actor, critic, optim, rollout)
            rec.emit(update_payload(rows, stop, rollout, index, step, lr))  # record
    print(f"done: {step} steps; check it with: sanctum check {rec.run_dir}")


if __name__ == "__main__":
    main()
