"""The device setting resolved against the machine; bf16 autocast as an option."""

from __future__ import annotations

import pytest
import torch

from ppo.core.device import autocast, resolve_device

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_auto_is_the_cpu_without_cuda_and_cpu_is_always_the_cpu() -> None:
    assert resolve_device("cpu").type == "cpu"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    with pytest.raises(ValueError, match="device must be one of auto, cpu, cuda"):
        resolve_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_without_a_device_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match='device = "cuda" but torch finds no CUDA device'):
        resolve_device("cuda")


def test_bf16_autocast_runs_a_linear_in_bf16_and_fp32_leaves_it() -> None:
    layer = torch.nn.Linear(4, 4)
    x = torch.ones(2, 4)
    with autocast(torch.device("cpu"), "bf16"):
        assert layer(x).dtype == torch.bfloat16
    with autocast(torch.device("cpu"), "fp32"):
        assert layer(x).dtype == torch.float32


@needs_cuda
def test_cuda_resolves_to_a_cuda_device() -> None:
    assert resolve_device("cuda").type == "cuda"


def test_a_rank_takes_the_gpu_of_its_local_rank_and_one_past_the_last_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto", local_rank=1) == torch.device("cuda", 1)
    assert resolve_device("cuda", local_rank=0) == torch.device("cuda", 0)
    assert resolve_device("cpu", local_rank=3) == torch.device("cpu")
    with pytest.raises(ValueError, match="torch sees 2 on this machine and 3 processes need"):
        resolve_device("cuda", local_rank=2)
