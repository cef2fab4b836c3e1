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

from ppo import checkpoint
from ppo.config import PPOConfig
from ppo.policy import ActorCritic

INIT = "init"
"""``reference = "init"``: the policy training starts from."""


def load_weights(policy: ActorCritic, source: str | Path, what: str) -> None:
    """Load the policy weights of a checkpoint (a .pt file or a run folder) into ``policy``;
    a checkpoint of another architecture is a :class:`~ppo.checkpoint.CheckpointError`
    naming ``what`` it was for and the file."""
    path = checkpoint.find(Path(source))
    weights = checkpoint.entry(checkpoint.load(path), "model", path)
    try:
        policy.load_state_dict(weights)
    except (RuntimeError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise checkpoint.CheckpointError(
            f"{path} cannot be the {what}: its policy does not fit this environment and "
            f"network ({first})"
        ) from None


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
