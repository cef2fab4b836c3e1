"""Recorders for trainers we do not own, each writing the same event log ``sanctum`` reads.

Every integration imports its trainer only when it is used, so ``telemetry`` keeps to
msgspec and the standard library; without the trainer's extra it says which one to
install. ``telemetry.integrations.sb3``: Stable-Baselines3's PPO, one callback;
``telemetry.integrations.trl``: TRL's GRPO, RLOO and PPO trainers, one callback;
``telemetry.integrations.rllib``: RLlib's PPO, measured inside its learner.
``recorded.RecordedRun`` is their ``with`` block. What measures a torch policy's update
from outside (the probe, and the TorchRL, skrl and Tianshou recorders built on it) imports
torch: it is the package :mod:`torchprobe`, above this one.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Final, NoReturn

from telemetry.text import visible


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


EXIT_USAGE: Final = 2
"""A script that cannot start (an extra is missing) exits with this, as ``ppo`` and
``sanctum`` do for unusable input."""


def missing_extra(extra: str, what: str, exc: ImportError) -> NoReturn:
    """End a script whose optional dependency is missing: one line on standard error naming
    the extra that provides it (``what`` says what needs it), then exit 2, no traceback."""
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    why = str(exc) or type(exc).__name__
    print(
        visible(
            f"{script}: {what} needs the {extra} extra: pip install 'sanctum-ppo[{extra}]' ({why})"
        ),
        file=sys.stderr,
    )
    raise SystemExit(EXIT_USAGE)
