"""Which events file a command means: a run folder, an events file, or the newest run; and
the several runs of ``sanctum RUN RUN ...`` and ``--all DIR``.

Shared by every ``sanctum`` command, so ``sanctum RUN``, ``check RUN`` and ``summary RUN``
read the same file for the same RUN.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from telemetry.recorder import EVENTS_FILE

DEFAULT_RUNS_DIR = Path("runs")
"""Where ``ppo train`` puts runs, and where ``sanctum`` looks without a RUN."""


class UsageError(Exception):
    """The arguments do not name something usable; exit 2 with this message."""


def resolve_run(run: str | None, runs_dir: Path = DEFAULT_RUNS_DIR) -> Path:
    """The events file for RUN: a run folder, an events file, the newest run of a folder of
    runs, or (no RUN) the newest run in ``runs_dir``.

    A path that does not exist yet is kept (the dashboard waits for it): with a suffix it
    is taken as the events file, without one as a run folder. A path that cannot be looked
    at (a folder this user may not search, a name too long) is a :class:`UsageError`
    naming it.
    """
    try:
        return _resolve(run, runs_dir)
    except OSError as exc:  # PermissionError, ENAMETOOLONG: Path.exists() lets these through
        where = exc.filename if exc.filename is not None else (run or runs_dir)
        why = "permission denied" if isinstance(exc, PermissionError) else exc.strerror
        raise UsageError(f"{where}: cannot look there ({why or exc})") from None


def _resolve(run: str | None, runs_dir: Path) -> Path:
    if run is None:
        return newest_run(runs_dir)
    path = Path(run)
    if path.is_dir():
        if not (path / EVENTS_FILE).exists() and any(path.glob(f"*/{EVENTS_FILE}")):
            return newest_run(path)  # a folder of runs, such as ./runs itself
        return path / EVENTS_FILE
    if path.exists() or path.suffix:
        return path
    return path / EVENTS_FILE


def newest_run(runs_dir: Path) -> Path:
    """The most recently written ``<runs_dir>/<run>/events.jsonl``."""
    hint = "; pass a run folder or an events file"
    return sorted(_events_files(runs_dir, hint), key=lambda p: p.stat().st_mtime)[-1]


def _events_files(folder: Path, hint: str = "") -> list[Path]:
    """Every ``folder/*/events.jsonl``; UsageError naming where it looked when there is none."""
    paths = list(folder.glob(f"*/{EVENTS_FILE}"))
    if not paths:
        raise UsageError(f"no run under {folder}/ (looked for {folder}/*/{EVENTS_FILE}){hint}")
    return paths


def find_runs(runs: Sequence[str], all_dir: str | None) -> list[Path]:
    """The events files of ``runs`` (each resolved as ``sanctum RUN`` resolves it), or of
    every run folder directly under ``all_dir``, sorted by name. UsageError when both are
    given, when ``all_dir`` holds no run, or when one events file is named twice."""
    if all_dir is not None:
        if runs:
            raise UsageError("give RUNs or --all DIR, not both")
        paths = runs_under(Path(all_dir))
    else:
        paths = [resolve_run(run) for run in runs]
    seen: set[Path] = set()
    for path in paths:
        key = path.resolve()
        if key in seen:
            raise UsageError(f"{path} is named twice")
        seen.add(key)
    return paths


def runs_under(folder: Path) -> list[Path]:
    """Every ``folder/*/events.jsonl``, sorted by run folder name."""
    if not folder.is_dir():
        raise UsageError(f"--all {folder}: no such folder")
    return sorted(_events_files(folder))
