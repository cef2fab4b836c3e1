"""A config's ``device`` resolved on this machine: the one part of the config that needs
torch, kept apart so that reading, listing and checking a config loads none."""

from __future__ import annotations

import torch

from ppo.config.settings import ConfigError
from ppo.core.device import resolve_device


def resolved_device(name: str, local_rank: int | None = None) -> torch.device:
    """A config's ``device`` resolved on this machine
    (:func:`ppo.core.device.resolve_device`); a :class:`ConfigError` when it names CUDA and
    torch sees none, or fewer GPUs than the job's processes need."""
    try:
        return resolve_device(name, local_rank)
    except ValueError as exc:
        raise ConfigError([str(exc)]) from None
