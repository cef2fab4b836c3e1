"""The pieces of training across processes that need no second process."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from ppo.config import PPOConfig
from ppo.distributed.launch import without_nproc
from ppo.distributed.world import (
    SINGLE,
    DistributedSetupError,
    World,
    backend_error_line,
    launched_world_size,
    local_rank,
)
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


def test_local_rank_from_the_launcher_environment_picks_a_ranks_gpu() -> None:
    assert local_rank({}) is None and local_rank({"LOCAL_RANK": "3"}) is None  # one process
    assert local_rank({"WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == 1
    with pytest.raises(DistributedSetupError, match="LOCAL_RANK must be an integer"):
        local_rank({"WORLD_SIZE": "2", "LOCAL_RANK": "x"})


@pytest.mark.parametrize(
    ("raised", "line"),
    [
        (
            "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
            "Connection closed by peer",
        ),
        (
            "NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
            "remote process exited or there was a network error, NCCL version 2.21.5\n"
            "ncclRemoteError: A call failed possibly due to a network error",
            "NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
        ),
        (
            "[PG 0 Rank 1] [Rank 1] Work WorkNCCL(SeqNum=5, OpType=ALLREDUCE) timed out in "
            "blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).",
            "Work WorkNCCL(SeqNum=5, OpType=ALLREDUCE) timed out in blocking wait "
            "(TORCH_NCCL_BLOCKING_WAIT=1).",
        ),
    ],
    ids=["gloo", "nccl-error", "nccl-timeout"],
)
def test_a_backend_error_is_one_line_without_its_source_position(raised: str, line: str) -> None:
    assert backend_error_line(RuntimeError(raised)) == line
    lost = World(rank=0, size=2)._lost_message("update 3 decision", RuntimeError(raised))
    assert lost == f"another rank stopped answering (during update 3 decision; {line[:160]})"


def test_the_launcher_passes_every_argument_but_nproc() -> None:
    argv = ["train", "--nproc", "2", "--seed", "3", "--nproc=4", "--headless"]
    assert without_nproc(argv) == ["train", "--seed", "3", "--headless"]


def test_the_checksum_sees_any_change_of_any_weight() -> None:
    state = {"a": torch.zeros(3), "b": torch.ones(2)}
    before = parameter_checksum(state)
    assert parameter_checksum({k: v.clone() for k, v in state.items()}) == before
    state["b"][1] = 1.0 + 1e-7
    assert parameter_checksum(state) != before
