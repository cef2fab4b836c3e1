"""Resuming a run: what its checkpoint holds, written by the trainer and read back.

A checkpoint is one torch file (:mod:`ppo.model.checkpoint`): the policy, the agent
(optimizer, KL coefficients, shuffling generator), the config, the counters, rank 0's
sampling RNG, the run id, the number of processes, and, when the run has them, the frozen
reference policy and the normalisation statistics. :func:`run_state` builds it;
:func:`restore` loads it into a freshly built policy, agent and statistics, and names any
entry that is missing or unusable rather than failing with a bare ``KeyError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ppo.config import PPOConfig
from ppo.core.normalize import Normalization
from ppo.distributed.world import World
from ppo.model import checkpoint
from ppo.model import reference as ref
from ppo.model.checkpoint import Counters
from ppo.model.policy import ActorCritic
from ppo.update.agent import PPOAgent

RESUME_ENTRIES = (
    "model",
    "agent.optimizer",
    "agent.kl_coef",
    "agent.generator",
    "rng.sampling",
    "counters.update",
    "counters.global_step",
)
"""Checkpoint entries a resume reads (as :func:`run_state` writes them)."""


def config_from_checkpoint(run: Path) -> PPOConfig:
    """The config a run was trained with, read from its latest checkpoint."""
    path = checkpoint.find(run)
    saved = checkpoint.entry(checkpoint.load(path), "config", path)
    if not (isinstance(saved, dict) and all(isinstance(key, str) for key in saved)):
        raise checkpoint.CheckpointError(f"{path}: its 'config' entry is not a table of settings")
    return PPOConfig.from_mapping(saved, str(run))


def run_state(
    agent: PPOAgent,
    config: PPOConfig,
    counters: Counters,
    sampling: np.random.Generator,
    run_id: str,
    world: World,
    reference: ActorCritic | None,
    norm: Normalization | None,
) -> dict[str, Any]:
    """Everything a resume needs, as one checkpoint's entries."""
    state = {
        "model": agent.policy.state_dict(),
        "agent": agent.state_dict(),
        "config": config.to_dict(),
        "counters": {"update": counters.update, "global_step": counters.global_step},
        "rng": {"sampling": sampling.bit_generator.state},
        "run_id": run_id,
        "world_size": world.size,
    }
    if reference is not None:
        state["reference"] = reference.state_dict()
    if norm is not None:
        state.update(norm.state_dict())
    return state


def restore(
    path: Path,
    world: World,
    agent: PPOAgent,
    sampling: np.random.Generator,
    norm: Normalization,
    uses_reference: bool,
) -> tuple[Counters, ActorCritic | None]:
    """Load the checkpoint at ``path`` into ``agent`` (its policy too), ``sampling`` (on
    rank 0; other ranks keep their own streams) and ``norm``; return its counters and the
    frozen reference policy (None when the run uses none)."""
    policy = agent.policy
    state = checkpoint.load(path)
    for name in RESUME_ENTRIES:  # a missing entry is named, not a bare KeyError
        checkpoint.entry(state, name, path)
    counters = Counters(
        update=checkpoint.count(state, "counters.update", path),
        global_step=checkpoint.count(state, "counters.global_step", path),
    )
    saved_world = checkpoint.count({"world_size": 1, **state}, "world_size", path, low=1)
    if saved_world != world.size:
        raise checkpoint.CheckpointError(
            f"{path} was written by {saved_world} process(es); resume it with "
            f"{saved_world}, not {world.size}"
        )
    with checkpoint.restoring(path, "model"):  # the values of a file are input: any
        policy.load_state_dict(state["model"])  # type or shape may be wrong
    with checkpoint.restoring(path, "agent"):
        agent.load_state_dict(state["agent"])
    if world.is_main:
        with checkpoint.restoring(path, "rng.sampling"):
            sampling.bit_generator.state = state["rng"]["sampling"]
    return counters, _restore_shaping(state, path, policy, norm, uses_reference)


def _restore_shaping(
    state: dict[str, Any],
    path: Path,
    policy: ActorCritic,
    norm: Normalization,
    uses_reference: bool,
) -> ActorCritic | None:
    """The normalisation statistics and the reference policy, as the checkpoint saved them."""
    saved = {name: checkpoint.entry(state, name, path) for name in norm.names}
    try:
        norm.load(saved)
    except ValueError as exc:
        raise checkpoint.CheckpointError(f"{path}: {exc}") from None
    if not uses_reference:
        return None
    reference = ref.frozen(policy)
    weights = checkpoint.entry(state, "reference", path)
    with checkpoint.restoring(path, "reference"):
        reference.load_state_dict(weights)
    return reference
