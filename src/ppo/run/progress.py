"""Headless progress: a Rich bar on a terminal, plain periodic lines elsewhere (CI logs).

Reporters only display the trainer's :class:`~ppo.run.trainer.Progress`; they never decide
anything, and a plain reporter prints at most one line per ``interval`` seconds (plus the
last update) so a log stays short however fast training runs.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TextIO

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress

if TYPE_CHECKING:
    from ppo.run.trainer import Progress


def updates_done(done: int, total: int) -> str:
    """``updates 10/40``: how many updates are done, a count (plural, so it is not read as
    the 0-based ``update`` index that the event log, ``sanctum`` and the dashboard show:
    the last of 40 updates is ``update 39``)."""
    return f"updates {done}/{total}"


def describe(p: Progress) -> str:
    """``updates 10/40  12,345 steps/s  return 33.90`` (return: the final return so far,
    :data:`telemetry.returns.FINAL_RETURN`)."""
    ret = "n/a" if p.recent_return_mean is None else f"{p.recent_return_mean:.2f}"
    stop = "  (early stop)" if p.early_stopped else ""
    return (
        f"{updates_done(p.updates_done, p.num_updates)}  {p.steps_per_second:,.0f} steps/s  "
        f"return {ret}{stop}"
    )


class Reporter(Protocol):
    """Shows progress; used as a context manager around training."""

    def update(self, progress: Progress) -> None: ...

    def __enter__(self) -> Reporter: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class PlainReporter:
    """One line every ``interval`` seconds and one for the last update."""

    def __init__(self, stream: TextIO = sys.stdout, interval: float = 5.0) -> None:
        self.stream = stream
        self.interval = interval
        self._last = -float("inf")
        self.broken = False
        """Standard output could not be written: progress is no longer shown (training
        goes on; the event log records it)."""

    def update(self, progress: Progress) -> None:
        """Print a line if enough time has passed or training is done."""
        now = time.monotonic()
        if self.broken or (
            now - self._last < self.interval and progress.updates_done < progress.num_updates
        ):
            return
        self._last = now
        pct = 100.0 * progress.global_step / max(progress.total_steps, 1)
        steps = f"step {progress.global_step}/{progress.total_steps} ({pct:.0f}%)"
        try:
            print(f"{steps}  {describe(progress)}", file=self.stream, flush=True)
        except OSError:  # a closed pipe, a full disk: say nothing more, keep training
            self.broken = True

    def __enter__(self) -> PlainReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class RichReporter:
    """A Rich progress bar over environment steps."""

    def __init__(self) -> None:
        self._bar = RichProgress(
            TextColumn("[bold]ppo train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
        )
        self._task = self._bar.add_task("starting", total=None)

    def update(self, progress: Progress) -> None:
        """Advance the bar to the progress' step count."""
        self._bar.update(
            self._task,
            completed=progress.global_step,
            total=progress.total_steps,
            description=describe(progress),
        )

    def __enter__(self) -> RichReporter:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()
