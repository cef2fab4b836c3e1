"""What every integration that records a run as a ``with`` block shares: the run starts when
the block is entered, the integration then attaches itself to its trainer, and when the
block ends it detaches (the trainer as it was) and the run finishes as the block ended
(``completed``; ``failed`` with the error's first line; ``interrupted`` on Ctrl-C). A
trainer that returns need not have trained anything usable: an integration that sees so
(:meth:`RecordedRun.ending`: a policy of NaN, no env runner left) ends the run ``failed``,
saying what it saw, never ``completed``."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from telemetry.events import RunStatus
from telemetry.recorder import Recorder

if TYPE_CHECKING:
    from typing import Self  # Python 3.11; only read by the type checker


class Ending(Protocol):
    """What says how a run whose trainer returned ends (an ``UpdateProbe``)."""

    def ending(self) -> tuple[RunStatus, str] | None: ...


class RecordedRun:
    """A trainer's run recorded into ``recorder`` (which the subclass builds) for the
    duration of a ``with`` block; :meth:`attach` and :meth:`detach` are the subclass's."""

    recorder: Recorder

    @property
    def run_dir(self) -> Path:
        """The run's folder (its ``events.jsonl``)."""
        return self.recorder.run_dir

    def attach(self) -> None:
        """Hook into the trainer, once the run has started (nothing by default)."""

    def detach(self) -> None:
        """Leave the trainer as it was, before the run finishes (nothing by default)."""

    def ending(self) -> tuple[RunStatus, str] | None:
        """How a run whose trainer returned ends, when not ``completed``: ``("failed",
        reason)`` when what the trainer leaves cannot be used. By default the probe's say,
        for an integration built on one (kept as ``probe``: a policy of NaN), else None."""
        probe: Ending | None = getattr(self, "probe", None)
        return None if probe is None else probe.ending()

    def __enter__(self) -> Self:
        self.recorder.start()
        self.attach()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.detach()
            ending = self.ending() if exc is None else None
            if ending is not None:
                self.recorder.finish(*ending)
        finally:
            self.recorder.__exit__(exc_type, exc, tb)
