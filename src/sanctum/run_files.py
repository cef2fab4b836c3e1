"""Which events file a command means: a run folder, an events file, or the newest run.

Shared by every ``sanctum`` command, so ``sanctum RUN``, ``check RUN`` and ``summary RUN``
read the same file for the same RUN.
"""

from __future__ import annotations

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
    is taken as the events file, without one as a run folder.
    """
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
    candidates = sorted(runs_dir.glob(f"*/{EVENTS_FILE}"), key=lambda p: p.stat().st_mtime)
    if not candidates:
        raise UsageError(
            f"no run under {runs_dir}/ (looked for {runs_dir}/*/{EVENTS_FILE}); "
            "pass a run folder or an events file"
        )
    return candidates[-1]
