"""The actor in numpy, for the per-step rollout path.

A rollout calls the actor once per vector step on a handful of observations, where torch's
per-op dispatch costs more than the arithmetic. This class reads the actor's weights as
numpy *views* of the torch parameters (the optimizer updates them in place, so the views
are always current) and samples with a numpy Generator. Only actions come out of it; the
log-probabilities and values used for training are computed by the torch policy over the
whole rollout afterwards, so the two forwards never have to agree to the last bit.
"""

from __future__ import annotations

import numpy as np
from torch import nn

from ppo.model.policy import ActorCritic


class NumpyActor:
    """Samples actions from ``policy``'s actor without going through torch."""

    def __init__(self, policy: ActorCritic) -> None:
        self.discrete = policy.action.discrete
        linears = [m for m in policy.actor if isinstance(m, nn.Linear)]
        if not linears or any(p.device.type != "cpu" for p in policy.parameters()):
            raise ValueError("NumpyActor needs an MLP actor on the CPU")
        # views, not copies: (in, out) weight and bias per layer
        self.layers = [(m.weight.detach().numpy().T, m.bias.detach().numpy()) for m in linears]
        self.relu = any(isinstance(m, nn.ReLU) for m in policy.actor)
        self.log_std = None if policy.log_std is None else policy.log_std.detach().numpy()

    def output(self, obs: np.ndarray) -> np.ndarray:
        """Logits (discrete) or means (box) for a (batch, obs_dim) float32 array."""
        h = obs
        for weight, bias in self.layers[:-1]:
            h = h @ weight + bias
            h = np.maximum(h, 0.0) if self.relu else np.tanh(h)
        weight, bias = self.layers[-1]
        out: np.ndarray = h @ weight + bias
        return out

    def act(self, obs: np.ndarray, mask: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
        """One sampled action per row; a masked action (mask False) is never chosen."""
        out = self.output(obs)
        if self.discrete:
            if mask is not None:
                if not mask.any(axis=1).all():
                    raise ValueError("an environment reported an action mask with no legal action")
                out = np.where(mask, out, -np.inf)
            # Gumbel-max: argmax(logits + Gumbel noise) is a sample of softmax(logits)
            choice: np.ndarray = np.argmax(out + rng.gumbel(size=out.shape), axis=1)
            return choice
        assert self.log_std is not None
        noise = rng.standard_normal(out.shape, dtype=np.float32)
        sample: np.ndarray = out + np.exp(self.log_std) * noise
        return sample
