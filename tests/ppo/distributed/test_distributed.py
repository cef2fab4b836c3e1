"""The pieces of training across processes that need no second process."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from ppo.config import PPOConfig
from ppo.distributed.launch import without_nproc
from ppo.distributed.world import SINGLE, DistributedSetupError, World, launched_world_size
from ppo.run.ranks import env_seed_offset, parameter_checksum, rank_share


def test_one_process_is_its_own_share_and_its_collectives_do_nothing() -> None:
    config = PPOConfig()
    assert rank_share(config, SINGLE) is config
    t = torch.tensor([1.0, float("nan")])
    assert SINGLE.mean(t, "x") is t and SINGLE.gather(t, "x") is t
    assert SINGLE.gather_objects(3, "x") == [3] and SINGLE.broadcast("id", "x") == "id"


def test_a_rank_steps_its_share_of_the_envs_for_the_same_number_of_updates() -> None:
    config = PPOConfig(num_envs=8, num_steps=128, total_steps=100_000)
    world = World(rank=3, size=4)
    share = rank_share(config, world)
    assert share.num_envs == 2 and share.num_updates == config.num_updates
    assert env_seed_offset(world, share) == 6  # ranks 0-2 seeded envs 0-5
    assert dataclasses.replace(share, num_envs=8, total_steps=100_000) == config


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"num_envs": 3}, "num_envs (3) must be a multiple of the 2 processes"),
        ({"num_envs": 2, "num_steps": 3, "num_minibatches": 2}, "equal shards"),
    ],
)
def test_a_job_that_cannot_be_shared_says_why(fields: dict[str, object], message: str) -> None:
    with pytest.raises(DistributedSetupError, match=re.escape(message)):
        rank_share(PPOConfig(**fields), World(rank=0, size=2))  # type: ignore[arg-type]


def test_world_size_from_the_launcher_environment() -> None:
    assert launched_world_size({}) == 1
    assert launched_world_size({"WORLD_SIZE": "2"}) == 2
    with pytest.raises(DistributedSetupError, match="WORLD_SIZE must be an integer"):
        launched_world_size({"WORLD_SIZE": "two"})


def test_the_launcher_passes_every_argument_but_nproc() -> None:
    argv = ["train", "--nproc", "2", "--seed", "3", "--nproc=4", "--headless"]
    assert without_nproc(argv) == ["train", "--seed", "3", "--headless"]


def test_the_checksum_sees_any_change_of_any_weight() -> None:
    state = {"a": torch.zeros(3), "b": torch.ones(2)}
    before = parameter_checksum(state)
    assert parameter_checksum({k: v.clone() for k, v in state.items()}) == before
    state["b"][1] = 1.0 + 1e-7
    assert parameter_checksum(state) != before
