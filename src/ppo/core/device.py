"""Where a trainer's tensors live: the config's ``device`` ("auto", "cpu" or "cuda")
resolved against what this machine has, and the ``precision`` its forwards run in."""

from __future__ import annotations

import contextlib

import torch

from ppo.core.choices import DEVICE_NAMES, Precision


def resolve_device(name: str, local_rank: int | None = None) -> torch.device:
    """``auto``: a CUDA device when torch sees one, else the CPU; ``cuda`` without one is a
    ValueError naming the setting (never a silent fall back to the CPU). The CUDA device is
    ``cuda:local_rank`` for a rank of a job across processes (one GPU each: a rank past
    the last device is a ValueError too), else the current one."""
    if name not in DEVICE_NAMES:
        raise ValueError(f"device must be one of {', '.join(DEVICE_NAMES)}, got {name!r}")
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ValueError('device = "cuda" but torch finds no CUDA device (use "auto" or "cpu")')
        if local_rank is None:
            return torch.device("cuda", torch.cuda.current_device())
        count = torch.cuda.device_count()
        if local_rank >= count:
            raise ValueError(
                f'device = "{name}" gives each process a GPU, but torch sees {count} on this '
                f'machine and {local_rank + 1} processes need them (fewer processes, or "cpu")'
            )
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def autocast(device: torch.device, precision: Precision) -> contextlib.AbstractContextManager[None]:
    """The forwards' precision: bf16 autocast on ``device``, or nothing (fp32)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
