"""Checkpoints: model, optimizer, config, counters and RNG states in one torch file.

Everything saved is a tensor or a builtin, so checkpoints load with
``torch.load(weights_only=True)`` and opening one cannot execute code. Files are written
to a temporary name and renamed, so a crash mid-save never leaves a torn ``latest.pt``.
Environment state is not checkpointable in general; a resume starts fresh episodes (see
:func:`ppo.envs.reset_seed`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

FORMAT = 1
"""Version of the checkpoint layout."""
CHECKPOINT_DIR = "checkpoints"
LATEST = "latest.pt"


class CheckpointError(ValueError):
    """A checkpoint cannot be found or used; the message names the file."""


@dataclass(frozen=True)
class Counters:
    """Where training stands: the next update to run and the steps taken so far."""

    update: int
    global_step: int


def save(path: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` atomically to ``path`` and point ``latest.pt`` next to it at it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"format": FORMAT, **state}, tmp)
    os.replace(tmp, path)
    if path.name != LATEST:
        latest = path.parent / LATEST
        shutil.copyfile(path, latest.with_suffix(".tmp"))
        os.replace(latest.with_suffix(".tmp"), latest)
    return path


def path_for(run_dir: Path, update: int) -> Path:
    """``<run>/checkpoints/update_000123.pt``."""
    return run_dir / CHECKPOINT_DIR / f"update_{update:06d}.pt"


def find(run: Path) -> Path:
    """The checkpoint to resume ``run`` from: a .pt file, or a run folder's latest one."""
    if run.is_file():
        return run
    candidate = run / CHECKPOINT_DIR / LATEST
    if candidate.is_file():
        return candidate
    if not run.exists():
        raise CheckpointError(f"no run at {run}")
    raise CheckpointError(f"no checkpoint in {run} (looked for {candidate})")


def entry(state: dict[str, Any], dotted: str, path: Path) -> Any:
    """``state["a"]["b"]`` for ``"a.b"``; a missing entry names itself and the file."""
    value: Any = state
    parts = dotted.split(".")
    for depth, key in enumerate(parts):
        if not isinstance(value, dict) or key not in value:
            missing = ".".join(parts[: depth + 1])
            raise CheckpointError(f"{path}: checkpoint has no {missing!r} entry")
        value = value[key]
    return value


def load(path: Path) -> dict[str, Any]:
    """Read a checkpoint safely (``weights_only=True``) and check its layout version."""
    try:
        state: dict[str, Any] = torch.load(path, weights_only=True, map_location="cpu")
    except (OSError, RuntimeError, EOFError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path}: unsupported checkpoint format {found!r}")
    return state
