"""MLP actor-critic for Discrete (masked categorical) and Box (diagonal Gaussian) actions.

Actor and critic are separate MLPs with CleanRL's orthogonal initialisation (hidden gain
sqrt(2), policy head 0.01, value head 1). The per-step rollout path calls only the actor
(:meth:`ActorCritic.act`); values and old log-probabilities are computed afterwards for the
whole rollout in one batched pass (:meth:`ActorCritic.evaluate`), which gives the same
numbers with a fraction of the per-step overhead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from ppo.config import Activation
from ppo.core.distributions import DiagGaussian, MaskedCategorical


@dataclass(frozen=True)
class ActionSpec:
    """What the policy head must produce: ``n`` logits (discrete) or ``n`` means (box)."""

    discrete: bool
    n: int
    low: np.ndarray | None = None
    high: np.ndarray | None = None

    @classmethod
    def from_space(cls, space: spaces.Space[object]) -> ActionSpec:
        """Spec for a Gymnasium single-environment action space."""
        if isinstance(space, spaces.Discrete):
            return cls(discrete=True, n=int(space.n))
        if isinstance(space, spaces.Box) and len(space.shape) == 1:
            return cls(discrete=False, n=int(space.shape[0]), low=space.low, high=space.high)
        raise ValueError(f"action space {space} is not supported: use Discrete or a 1-D Box")


def _layer(n_in: int, n_out: int, gain: float) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.constant_(layer.bias, 0.0)
    return layer


def mlp(
    n_in: int, hidden: tuple[int, ...], n_out: int, out_gain: float, act: Activation
) -> nn.Sequential:
    """Linear/activation stack with orthogonal initialisation."""
    activation: type[nn.Module] = nn.Tanh if act == "tanh" else nn.ReLU
    layers: list[nn.Module] = []
    width = n_in
    for size in hidden:
        layers += [_layer(width, size, math.sqrt(2.0)), activation()]
        width = size
    layers.append(_layer(width, n_out, out_gain))
    return nn.Sequential(*layers)


Distribution = MaskedCategorical | DiagGaussian


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs over a flat observation vector."""

    def __init__(
        self,
        obs_dim: int,
        action: ActionSpec,
        hidden: tuple[int, ...] = (64, 64),
        activation: Activation = "tanh",
    ) -> None:
        super().__init__()
        self.action = action
        self.actor = mlp(obs_dim, hidden, action.n, 0.01, activation)
        self.critic = mlp(obs_dim, hidden, 1, 1.0, activation)
        self.log_std = nn.Parameter(torch.zeros(action.n)) if not action.discrete else None

    def distribution(self, obs: Tensor, mask: Tensor | None = None) -> Distribution:
        """The action distribution for a batch of observations."""
        out: Tensor = self.actor(obs)
        if self.log_std is None:
            return MaskedCategorical(out, mask)
        return DiagGaussian(out, self.log_std)

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """The actor's and the critic's parameters: disjoint, so each has its own gradient
        norm (the Gaussian log-std belongs to the actor)."""
        actor = list(self.actor.parameters())
        if self.log_std is not None:
            actor.append(self.log_std)
        return {"actor": actor, "critic": list(self.critic.parameters())}

    def value(self, obs: Tensor) -> Tensor:
        """State values, shape (batch,)."""
        out: Tensor = self.critic(obs)
        return out.squeeze(-1)

    def act(
        self,
        obs: Tensor,
        mask: Tensor | None = None,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> Tensor:
        """Sample (or take the mode of) an action per observation; call under no_grad."""
        dist = self.distribution(obs, mask)
        return dist.mode() if deterministic else dist.sample(generator)

    def evaluate(
        self, obs: Tensor, actions: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """log pi(a|s), entropy and V(s) for a batch, shapes (batch,) each."""
        dist = self.distribution(obs, mask)
        return dist.log_prob(actions), dist.entropy(), self.value(obs)

    def forward(
        self, obs: Tensor, actions: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`evaluate`: the pass DDP wraps, so its gradients are averaged over ranks."""
        return self.evaluate(obs, actions, mask)
