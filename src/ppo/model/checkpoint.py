"""Checkpoints: model, optimizer, config, counters and RNG states in one torch file.

Everything saved is a tensor or a builtin, so checkpoints load with
``torch.load(weights_only=True)`` and opening one cannot execute code. Files are written
to a temporary name and renamed, so a crash mid-save never leaves a torn ``latest.pt``.
Environment state is not checkpointable in general; a resume starts fresh episodes (see
:func:`ppo.rollout.envs.reset_seed`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from telemetry.files import InputFileError, open_input

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
    """Write ``state`` atomically to ``path`` and point ``latest.pt`` next to it at it.

    A save that fails (a full disk: torch reports it as a RuntimeError, the copy as an
    OSError) leaves no temporary file behind and raises :class:`CheckpointError`; the
    checkpoints already there are untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic(path, lambda tmp: torch.save({"format": FORMAT, **state}, tmp))
    if path.name != LATEST:
        _atomic(path.parent / LATEST, lambda tmp: shutil.copyfile(path, tmp))
    return path


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a temporary file, then rename it to ``path``; clean up if it fails."""
    tmp = path.with_suffix(".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        tmp.unlink(missing_ok=True)
        why = _why(exc) if isinstance(exc, OSError) else f"torch could not write it ({_why(exc)})"
        full = " (is the disk full?)" if shutil.disk_usage(path.parent).free < 1 << 20 else ""
        raise CheckpointError(f"cannot write checkpoint {path}: {why}{full}") from None


def _why(exc: BaseException) -> str:
    """The first line of an error, or its type when it says nothing."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def path_for(run_dir: Path, update: int) -> Path:
    """``<run>/checkpoints/update_000123.pt``."""
    return run_dir / CHECKPOINT_DIR / f"update_{update:06d}.pt"


def find(run: Path) -> Path:
    """The checkpoint to resume ``run`` from: a .pt file, or a run folder's newest one:
    ``latest.pt``, unless the checkpoint of the highest update is newer (a full disk
    stopped the copy to ``latest.pt``, leaving it behind or missing). Anything there that
    is not a folder is taken as the checkpoint file itself (:func:`load` refuses a FIFO,
    a device or a socket before reading a byte)."""
    if run.exists() and not run.is_dir():
        return run
    candidate = run / CHECKPOINT_DIR / LATEST
    saved = sorted((run / CHECKPOINT_DIR).glob("update_*.pt"))[-1:]  # zero-padded: by number
    if candidate.is_file():
        saved.append(candidate)  # the newest wins; latest.pt on a tie (it is a copy)
    if saved:
        return max(saved, key=lambda p: (p.stat().st_mtime_ns, p.name == LATEST))
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


COUNT_MAX = 2**63 - 1
"""The largest update or step count a checkpoint may hold (a signed 64-bit integer)."""


def count(state: dict[str, Any], dotted: str, path: Path, low: int = 0) -> int:
    """The integer entry ``dotted``, in [low, COUNT_MAX]; else a CheckpointError naming it."""
    value = entry(state, dotted, path)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= COUNT_MAX:
        shown = repr(value) if len(repr(value)) <= 60 else f"a {type(value).__name__}"
        raise CheckpointError(
            f"{path}: its {dotted!r} entry must be an integer in [{low}, 2^63-1], got {shown}"
        )
    return value


@contextlib.contextmanager
def restoring(path: Path, dotted: str) -> Iterator[None]:
    """Around loading the entry ``dotted`` into live objects: whatever it holds (a wrong
    type, a wrong shape, a missing key), a failure is one CheckpointError naming the file
    and the entry."""
    try:
        yield
    except CheckpointError:
        raise
    except (
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
        IndexError,
        OverflowError,
        RuntimeError,
    ) as exc:
        what = f"missing entry {exc}" if isinstance(exc, KeyError) else _joined(exc)
        raise CheckpointError(
            f"{path}: its {dotted!r} entry does not fit this config: {what}"
        ) from None


def _joined(exc: BaseException, limit: int = 300) -> str:
    """An error's lines joined into one (torch lists a state-dict mismatch on several),
    cut to ``limit`` characters."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    text = text or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_container(path: Path, fh: Any) -> None:
    """Refuse at once a file that is not the zip archive torch.save writes."""
    try:
        head = fh.read(4)
        fh.seek(0)
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from None
    if not head:
        raise CheckpointError(f"{path}: the file is empty (cut off while it was written?)")
    if head != b"PK\x03\x04":
        raise CheckpointError(f"{path}: not a checkpoint (not a file torch.save wrote)")


def check(path: Path) -> None:
    """Refuse now what :func:`load` would refuse at its first bytes: a file that is not
    regular (a FIFO, a device, a folder) or not the zip archive torch.save writes."""
    try:
        fh = open_input(path, "checkpoint")
    except InputFileError as exc:
        raise CheckpointError(str(exc)) from None
    with fh:
        _check_container(path, fh)


def load(path: Path) -> dict[str, Any]:
    """Read a checkpoint safely (``weights_only=True``) and check its layout version.

    The file is opened by the project's one opener (:func:`telemetry.files.open_input`:
    a regular file only, so a FIFO cannot hang it nor ``/dev/zero`` fill memory) and
    torch reads that open file. Whatever the file holds, the outcome is a state or a
    :class:`CheckpointError` that says what is wrong with the file in our words (torch's
    own advice for a refused file is to load it unsafely, which we never do nor
    suggest)."""
    try:
        fh = open_input(path, "checkpoint")
    except InputFileError as exc:
        raise CheckpointError(str(exc)) from None
    with fh:
        return _load_open(path, fh)


def _load_open(path: Path, fh: Any) -> dict[str, Any]:
    _check_container(path, fh)
    try:
        state: dict[str, Any] = torch.load(fh, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        if "Unsupported global" in str(exc):
            raise CheckpointError(
                f"{path}: refused: it holds Python objects besides tensors and plain values, "
                "and loading those could run code; only checkpoints ppo train wrote load"
            ) from None
        raise CheckpointError(f"{path}: not a checkpoint (its contents do not unpickle)") from None
    except (OSError, RuntimeError, EOFError, ValueError, AttributeError, ImportError) as exc:
        if "zip archive" in str(exc):
            raise CheckpointError(
                f"{path}: a damaged checkpoint (its zip archive is cut off)"
            ) from None
        raise CheckpointError(f"cannot read checkpoint {path}: {_why(exc)}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path}: unsupported checkpoint format {found!r}")
    return state
