"""Recorders for trainers we do not own, each writing the same event log ``sanctum`` reads.

Every integration imports its trainer only when it is used, so ``telemetry`` keeps to
msgspec and the standard library; without the trainer's extra it says which one to
install. ``telemetry.integrations.sb3``: Stable-Baselines3's PPO, one callback;
``telemetry.integrations.trl``: TRL's GRPO, RLOO and PPO trainers, one callback.
"""

from __future__ import annotations

import importlib
from typing import Any


def from_extra(module: str, name: str, hint: str) -> Any:
    """``module.name``, importing ``module`` now; when a library it needs is not installed,
    ModuleNotFoundError with ``hint``, one line naming the extra to install."""
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "telemetry":
            raise
        raise ModuleNotFoundError(hint) from exc
    return getattr(loaded, name)
