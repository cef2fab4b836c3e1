"""Advantages and return targets: GAE and episodic A = R - V, with correct episode ends.

Arrays are (num_steps, num_envs). ``next_values[t]`` is V of the state that followed step t:
the next observation inside an episode, the *final* observation when the episode ended at
t (Gymnasium's autoreset replaces it with a reset observation, so the trainer keeps it
aside). A terminated episode has no future (no bootstrap); a truncated one was cut by a
time limit and is bootstrapped from V(final observation), as Pardo et al., "Time Limits in
Reinforcement Learning" (2018) argue. Either way the advantage trace stops at the
boundary. GAE runs in numpy: a 128-step backward loop over small arrays is much cheaper
than the same loop in torch ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Steps:
    """One rollout as the advantage estimators read it: arrays of (num_steps, num_envs)."""

    rewards: FloatArray
    """r_t, as shaped for the advantages (scaled, minus any reference-KL penalty)."""
    values: FloatArray
    """V(s_t)."""
    next_values: FloatArray
    """V of the state that followed step t (of the final observation where an episode ended)."""
    terminated: BoolArray
    truncated: BoolArray


def td_errors(steps: Steps, gamma: float) -> FloatArray:
    """delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t): the critic's
    one-step error (no bootstrap past a terminal state; V(final obs) after a truncation)."""
    not_terminated = 1.0 - steps.terminated.astype(np.float32)
    deltas: FloatArray = (
        steps.rewards + np.float32(gamma) * steps.next_values * not_terminated - steps.values
    )
    return deltas


def gae(steps: Steps, gamma: float, lam: float) -> tuple[FloatArray, FloatArray]:
    """Generalised advantage estimation (Schulman et al. 2016); returns (advantages, returns).

    delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)
    A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1},  done = terminated | truncated
    """
    not_done = 1.0 - (steps.terminated | steps.truncated).astype(np.float32)
    deltas = td_errors(steps, gamma)
    decay = np.float32(gamma * lam) * not_done
    advantages = np.empty_like(deltas)
    carry = np.zeros(deltas.shape[1], dtype=np.float32)
    for t in range(deltas.shape[0] - 1, -1, -1):
        carry = deltas[t] + decay[t] * carry
        advantages[t] = carry
    return advantages, advantages + steps.values


def episodic(steps: Steps, gamma: float) -> tuple[FloatArray, FloatArray]:
    """A = R - V with R the discounted return-to-go; returns (advantages, returns).

    R_t = r_t + gamma * R_{t+1} inside an episode; at an episode end the continuation is 0
    (terminated) or V(final observation) (truncated); at the rollout's end, V(next obs).
    """
    rewards = steps.rewards
    done = steps.terminated | steps.truncated
    bootstrap = steps.next_values * (1.0 - steps.terminated.astype(np.float32))
    returns = np.empty_like(rewards)
    carry = steps.next_values[-1].copy()
    for t in range(rewards.shape[0] - 1, -1, -1):
        carry = rewards[t] + np.float32(gamma) * np.where(done[t], bootstrap[t], carry)
        returns[t] = carry
    return returns - steps.values, returns


def normalize(advantages: Tensor, std_min: float) -> Tensor:
    """(A - mean) / max(std, std_min); a batch of one is only centred."""
    centred = advantages - advantages.mean()
    if advantages.numel() < 2:
        return centred
    return centred / advantages.std().clamp(min=std_min)


def group_relative(
    rewards: Tensor, group_size: int, scale: bool, eps: float
) -> tuple[Tensor, Tensor]:
    """GRPO's advantage of each sample: its reward minus its group's mean, divided by the
    group's standard deviation (unbiased) plus ``eps`` when ``scale`` (Shao et al. 2024),
    not divided when not (Dr. GRPO, Liu et al. 2025). ``rewards [B]`` holds ``B / group_size``
    groups of ``group_size`` consecutive samples of one prompt. Returns the advantages
    ``[B]`` and, per group, whether its rewards are all equal (``[B / group_size]``: no
    advantage, no gradient; 0 exactly, even at ``eps`` 0)."""
    if group_size < 1 or rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not make groups of {group_size}")
    groups = rewards.view(-1, group_size)
    centred = groups - groups.mean(dim=1, keepdim=True)
    equal = groups.amax(dim=1) == groups.amin(dim=1)
    if scale and group_size > 1:
        scaled = centred / (groups.std(dim=1, keepdim=True) + eps)
        centred = torch.where(equal.unsqueeze(1), torch.zeros_like(centred), scaled)
    return centred.reshape(-1), equal
