"""Small builders shared by the ppo tests."""

from __future__ import annotations

import torch

from ppo.config import PPOConfig
from ppo.model.policy import ActionSpec, ActorCritic
from ppo.rollout.buffer import Batch


def small_policy(seed: int = 0, obs_dim: int = 4, actions: int = 3) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(obs_dim, ActionSpec(discrete=True, n=actions), hidden=(16,))


def batch_for(
    policy: ActorCritic, size: int = 64, seed: int = 0, log_ratio_shift: float = 0.0
) -> Batch:
    """A batch whose old log-probs are the policy's own, shifted by ``log_ratio_shift``.

    A shift s makes every initial ratio exp(s): a high-divergence batch for s far from 0.
    """
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(size, 4, generator=gen)
    with torch.no_grad():
        actions = policy.act(obs, generator=gen)
        logp, _, values = policy.evaluate(obs, actions)
    returns = values + torch.randn(size, generator=gen)
    return Batch(
        obs=obs,
        actions=actions,
        logp=logp - log_ratio_shift,
        values=values,
        returns=returns,
        advantages=torch.randn(size, generator=gen),
    )


def config(**overrides: object) -> PPOConfig:
    base: dict[str, object] = {"num_envs": 4, "num_steps": 16, "hidden_sizes": (16,)}
    return PPOConfig(**{**base, **overrides})  # type: ignore[arg-type]


def params_of(policy: ActorCritic) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def same_params(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
