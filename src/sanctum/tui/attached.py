"""A trainer with the dashboard attached: sanctum's one call for it, :func:`watch_process`.

The trainer runs in a child process, the dashboard in this one (docs/design.md, section 2):
training never shares the GIL with rendering, and a dashboard crash never kills training.
:func:`watch_process` starts the command in a session of its own, its output in files,
runs the very :class:`~sanctum.tui.app.SanctumApp` that ``sanctum RUN`` runs on its event
log with a handle on the child, and once the dashboard closes hands the caller a
:class:`~sanctum.live.trainer_process.ProcessOutcome`: how the child ended (or that it runs
on, detached), and how the log says the run finished. The caller reads that record, never
the app. Any command that writes an event log will do; ``ppo train`` is one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from sanctum.health.thresholds import Thresholds
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.live.trainer_process import ProcessOutcome, TrainerProcess
from sanctum.tui.app import SanctumApp

EXIT_GRACE: Final = 30.0
"""Seconds to wait for a trainer whose log says the run ended to exit."""

T = TypeVar("T")


@dataclass(frozen=True)
class AttachedProcess:
    """A started trainer child and the dashboard that watches it (not yet run)."""

    app: SanctumApp
    process: TrainerProcess

    @classmethod
    def start(
        cls,
        command: Sequence[str],
        events: Path,
        *,
        stdout_path: Path,
        stderr_path: Path,
        thresholds: Thresholds | str | os.PathLike[str] | None = None,
    ) -> AttachedProcess:
        """Start ``command`` (which writes the event log ``events``) and build its
        dashboard, judging by ``thresholds`` (a table, a thresholds file, or None for the
        shipped rules; a bad file raises ThresholdsError before anything starts)."""
        if not isinstance(thresholds, Thresholds):
            thresholds = load_thresholds(None if thresholds is None else Path(thresholds))
        process = TrainerProcess.start(command, stderr_path=stderr_path, stdout_path=stdout_path)
        return cls(SanctumApp(Path(events), thresholds, trainer=process), process)

    def outcome(self, grace: float = EXIT_GRACE) -> ProcessOutcome:
        """What became of the child, once the dashboard closed. A child whose log says the
        run ended is given ``grace`` seconds to exit."""
        app, process = self.app, self.process
        ended = app.trainer_exit or process.poll()
        snapshot = app.snapshot
        if ended is None and snapshot is not None and snapshot.run.status not in (None, "running"):
            ended = process.wait(grace)  # it recorded the end of the run and is exiting
        return ProcessOutcome(
            pid=process.pid,
            ended=ended,
            detached=app.choice == "detach",
            reason=None if snapshot is None else snapshot.run.reason,
        )

    def watch(self, report: Callable[[ProcessOutcome], T]) -> T:
        """Run the dashboard until it closes, then ``report(outcome)`` (also when the
        dashboard raised: the child may still run, and the user must learn where)."""
        try:
            self.app.run()
        finally:
            said = report(self.outcome())
        return said


def watch_process(
    command: Sequence[str],
    events: Path,
    report: Callable[[ProcessOutcome], T],
    *,
    stdout_path: Path,
    stderr_path: Path,
    thresholds: Thresholds | str | os.PathLike[str] | None = None,
) -> T:
    """Run ``command`` with the dashboard of its event log ``events`` attached: the child in
    a session of its own, its stdout and stderr appended to ``stdout_path`` and
    ``stderr_path``, the dashboard judging by ``thresholds``. Once the dashboard closes
    (quit, detach, stop), returns ``report(outcome)``: what became of the child."""
    attached = AttachedProcess.start(
        command, events, stdout_path=stdout_path, stderr_path=stderr_path, thresholds=thresholds
    )
    return attached.watch(report)
