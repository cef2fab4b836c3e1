"""Fine-tuning: the policy to start from and the frozen reference policy to stay near.

RLHF-style trainers (verl, TRL, OpenRLHF) keep a frozen copy of the policy they started
from (the reference) and hold the trained policy near it with a KL term, in the loss, in
the reward, or both. :func:`build_reference` makes it: a copy of the policy training starts
from (``reference = "init"``), or the policy of a checkpoint. It never trains: its
parameters do not require gradients, and its log-probabilities are computed once per
rollout, under ``no_grad``, and shared by both uses.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import Tensor

from ppo.config import PPOConfig
from ppo.model import checkpoint
from ppo.model.policy import ActorCritic

INIT = "init"
"""``reference = "init"``: the policy training starts from."""


def load_weights(policy: ActorCritic, source: str | Path, what: str) -> None:
    """Load the policy weights of a checkpoint (a .pt file or a run folder) into ``policy``;
    a missing, unusable or differently shaped checkpoint is a
    :class:`~ppo.model.checkpoint.CheckpointError` that names ``what`` it was for."""
    try:
        path = checkpoint.find(Path(source))
        weights = checkpoint.entry(checkpoint.load(path), "model", path)
    except checkpoint.CheckpointError as exc:
        raise checkpoint.CheckpointError(f"{what}: {exc}") from None
    mismatch = _mismatch(policy.state_dict(), weights)
    if mismatch is not None:
        raise checkpoint.CheckpointError(
            f"{what}: {path} holds a policy for another environment or network ({mismatch})"
        )
    policy.load_state_dict(weights)


def _mismatch(here: dict[str, Tensor], saved: object) -> str | None:
    """The first difference between this policy's parameters and a checkpoint's, in words."""
    if not isinstance(saved, dict):
        return "its model entry is not a set of weights"
    for name, tensor in here.items():
        other = saved.get(name)
        if not isinstance(other, Tensor):
            return f"it has no {name}"
        if other.shape != tensor.shape:
            return f"{name} is {list(other.shape)} there and {list(tensor.shape)} here"
    extra = sorted(set(saved) - set(here))
    return f"it has {extra[0]}, which this policy does not" if extra else None


def check_sources(config: PPOConfig) -> None:
    """Find the checkpoints the config names, and check each is a file torch.save wrote,
    before anything is built (their shapes are checked once the environment is known).
    A ``reference`` is checked whenever it is set, used or not: a setting that names a
    FIFO or nothing is a mistake to report now, not when a reference KL is turned on."""
    sources = [("init_from", config.init_from)]
    if config.reference != INIT:
        sources.append(("reference", config.reference))
    for name, source in sources:
        if source is not None:
            try:
                checkpoint.check(checkpoint.find(Path(source)))
            except checkpoint.CheckpointError as exc:
                raise checkpoint.CheckpointError(f"{name}: {exc}") from None


def frozen(policy: ActorCritic) -> ActorCritic:
    """A copy of ``policy`` that never trains."""
    reference = copy.deepcopy(policy)
    reference.requires_grad_(False)
    return reference.eval()


def build_reference(config: PPOConfig, policy: ActorCritic) -> ActorCritic | None:
    """The reference policy the config asks for, or None when no reference KL is on. Call
    it once the policy holds the weights training starts from."""
    if not config.uses_reference:
        return None
    reference = frozen(policy)
    if config.reference != INIT:
        load_weights(reference, config.reference, "reference policy")
    return reference


def log_prob(reference: ActorCritic, obs: Tensor, actions: Tensor, masks: Tensor | None) -> Tensor:
    """log pi_ref(a|s) for a batch, without a graph."""
    with torch.no_grad():
        return reference.distribution(obs, masks).log_prob(actions)
