"""What each rank of a multi-process run does differently: its share of the work, its
seeds, and (for every rank but 0) a recorder that records nothing.

The config a user writes describes the whole job: ``num_envs`` environments in all,
``total_steps`` steps in all. Rank ``r`` of ``n`` steps ``num_envs / n`` of them, seeded
``seed + r * num_envs / n`` onward, so the job's environments are seeded exactly as one
process would seed them; each minibatch is the union of the ranks' shards.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ppo.config import PPOConfig
from ppo.distributed.world import DistributedSetupError, World
from ppo.rollout.collector import RolloutResult
from telemetry.bus import Sink
from telemetry.events import PPOUpdatePayload


def rank_share(config: PPOConfig, world: World) -> PPOConfig:
    """This rank's part of the job ``config`` describes (``config`` itself in one process)."""
    if not world.distributed:
        return config
    n = world.size
    check_share(config, n)
    local_envs = config.num_envs // n
    return dataclasses.replace(
        config,
        num_envs=local_envs,
        total_steps=config.num_updates * local_envs * config.num_steps,  # same update count
    )


def check_share(config: PPOConfig, n: int) -> None:
    """Refuse (:class:`DistributedSetupError`) a job that ``n`` processes cannot share
    evenly; the launcher of ``--nproc`` asks before it starts any."""
    if config.num_envs % n:
        raise DistributedSetupError(
            f"num_envs ({config.num_envs}) must be a multiple of the {n} processes"
        )
    if (config.num_envs // n * config.num_steps) % config.num_minibatches:
        raise DistributedSetupError(
            f"each process's rollout ({config.num_envs // n} envs x {config.num_steps} steps) "
            f"must split into num_minibatches ({config.num_minibatches}) equal shards"
        )


def env_seed_offset(world: World, local: PPOConfig) -> int:
    """Added to the job's reset seed: rank r's envs continue where rank r - 1's stop."""
    return world.rank * local.num_envs


def sampling_rng(seed: int, world: World) -> np.random.Generator:
    """Action sampling: the run's seed on rank 0 (one process is unchanged), its own stream
    on every other rank."""
    return np.random.default_rng(seed if world.rank == 0 else [seed, world.rank])


def generator_seed(seed: int, world: World) -> int:
    """Seed of the minibatch shuffling generator of this rank."""
    return seed + 1 + 7919 * world.rank


def job_rollout(rollout: RolloutResult, world: World, update: int) -> RolloutResult:
    """The episodes every rank finished in this rollout (this rank's in one process)."""
    if not world.distributed:
        return rollout
    parts = world.gather_objects((rollout.returns, rollout.lengths), f"update {update} rollout")
    returns = tuple(r for rank_returns, _ in parts for r in rank_returns)
    lengths = tuple(n for _, rank_lengths in parts for n in rank_lengths)
    return dataclasses.replace(rollout, returns=returns, lengths=lengths)


class QuietRecorder:
    """The recorder of a rank other than 0: rank 0 records the run, the others nothing."""

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.run_id = run_id
        self.run_dir = run_dir / run_id
        self.path = self.run_dir / "events.jsonl"
        self.bus = self

    def __enter__(self) -> QuietRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def subscribe(self, sink: Sink, name: str | None = None) -> None:
        """Sinks belong to rank 0."""

    def emit(self, payload: Any) -> None:
        """Nothing: rank 0 emits the job's figures."""

    def finish(self, status: str, reason: str | None = None) -> None:
        """Nothing: rank 0 records how the run ended."""

    def log_moved(self) -> bool:
        return False


def parameter_checksum(state: Mapping[str, torch.Tensor]) -> str:
    """A hex digest of a state dict's tensors: equal on ranks that hold equal weights."""
    digest = hashlib.sha256()
    for tensor in state.values():
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def trace_update(
    run_path: Path,
    world: World,
    payload: PPOUpdatePayload,
    model: nn.Module,
    statistics: Mapping[str, Any] | None = None,
) -> None:
    """Append this rank's view of an update to ``run_path/ranks/rank<R>.jsonl``; with
    ``statistics`` (the normalisation state every rank shares), a checksum of them too."""
    stop = payload.early_stop
    line = {
        "update": payload.update,
        "rank": world.rank,
        "pid": os.getpid(),
        "early_stop": None if stop is None else [stop.epoch, stop.minibatch],
        "minibatches_completed": payload.minibatches_completed,
        "approx_kl": payload.approx_kl,
        "checksum": parameter_checksum(model.state_dict()),
    }
    if statistics:
        encoded = json.dumps(statistics, sort_keys=True).encode()
        line["statistics"] = hashlib.sha256(encoded).hexdigest()[:16]
    folder = run_path / "ranks"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"rank{world.rank}.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
