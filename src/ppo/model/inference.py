"""The actor in numpy, for the per-step rollout path.

A rollout calls the actor once per vector step on a handful of observations, where torch's
per-op dispatch costs more than the arithmetic. This class reads the actor's weights as
numpy arrays and samples with a numpy Generator. With the policy on the CPU they are
*views* of the torch parameters (the optimizer updates them in place, so the views are
always current); with the policy on a GPU they are a CPU copy, which :meth:`NumpyActor.refresh`
brings up to date after each update in one device-to-host read, so observations never
travel to the device per step. Only actions come out of it; the log-probabilities and
values used for training are computed by the torch policy over the whole rollout
afterwards, so the two forwards never have to agree to the last bit.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from ppo.model.policy import ActorCritic


class NumpyActor:
    """Samples actions from ``policy``'s actor without going through torch.

    ``copy``: hold a CPU copy of the weights rather than views (None: a copy exactly when
    the policy is not on the CPU, where views cannot be taken)."""

    def __init__(self, policy: ActorCritic, copy: bool | None = None) -> None:
        self.discrete = policy.action.discrete
        linears = [m for m in policy.actor if isinstance(m, nn.Linear)]
        if not linears:
            raise ValueError("NumpyActor needs an MLP actor")
        on_cpu = all(p.device.type == "cpu" for p in policy.parameters())
        self.copied = not on_cpu if copy is None else copy
        if not (on_cpu or self.copied):
            raise ValueError("NumpyActor reads views only of a policy on the CPU")
        self._sources: list[Tensor] = [t for m in linears for t in (m.weight, m.bias)]
        if policy.log_std is not None:
            self._sources.append(policy.log_std)
        self._host = [self._read(t) for t in self._sources]
        """Each source's array, in the source's layout (a view or a copy)."""
        # (in, out) weight and bias per layer
        pairs = self._host[: 2 * len(linears)]
        self.layers = [(w.T, b) for w, b in zip(pairs[0::2], pairs[1::2], strict=True)]
        self.relu = any(isinstance(m, nn.ReLU) for m in policy.actor)
        self.log_std = None if policy.log_std is None else self._host[-1]

    def _read(self, tensor: Tensor) -> np.ndarray:
        array: np.ndarray = tensor.detach().cpu().numpy()
        return array.copy() if self.copied else array

    def refresh(self) -> None:
        """Bring a copy up to date with the policy's weights (views need nothing)."""
        if not self.copied:
            return
        with torch.no_grad():
            flat = torch.cat([t.detach().reshape(-1) for t in self._sources]).cpu().numpy()
        start = 0
        for array in self._host:
            np.copyto(array, flat[start : start + array.size].reshape(array.shape))
            start += array.size

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
