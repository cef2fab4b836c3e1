"""Halting a run on its health: what a trainer asks of the judge that stops it.

A trainer that can be halted takes a :class:`Halter`, subscribes it to its recorder's bus
before ``run_started`` is written (``recorder.bus.subscribe(halter, name=halter.name)``),
and after each update asks :attr:`Halter.reason`. Once it is set, the trainer records
:meth:`Halter.anomaly`, stops at its next chance and finishes the run with
:attr:`Halter.status` and that reason. The judging is the halter's: ``sanctum`` ships one
(``sanctum.HaltGate``, judging by the rules ``sanctum check`` applies), and neither this
package nor a trainer needs to know how it decides. So the contract knows no consumer, and
a trainer depends only on this protocol. :class:`HaltWatch` is that sequence, for the
integrations that record a trainer they do not own; one whose trainer cannot be told to
stop raises :class:`TrainingHalted`. Standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NoReturn, Protocol, runtime_checkable

if TYPE_CHECKING:
    from telemetry.events import AnomalyPayload, Event, RunStatus
    from telemetry.recorder import Recorder

HALT_LEVELS: Final = ("critical", "warning")
"""The health levels a run may be halted on (``ppo train --halt-on``'s choices)."""
HALT_PREFIX: Final = "halted: "
"""How a halted run's reason begins (``run_finished.reason``), so that whoever reads how a
run ended knows it was halted: ``halted: <rule> <level> (...)``."""


@runtime_checkable
class Halter(Protocol):
    """A bus sink that judges each event it is given and says when the run must stop."""

    name: str
    """Its name as a sink of the recorder's bus."""
    status: RunStatus
    """How a halted run finishes (``run_finished.status``)."""

    def __call__(self, event: Event) -> None:
        """Fold one event of the run (the bus hands it every event, ``run_started`` first;
        a new ``run_started`` begins a new run)."""

    @property
    def reason(self) -> str | None:
        """``halted: <rule> <level> (...)`` (:data:`HALT_PREFIX`) once the run must stop;
        None until then."""

    def anomaly(self, global_step: int | None = None) -> AnomalyPayload:
        """The critical anomaly that records the stop (only once :attr:`reason` is set)."""


class TrainingHalted(RuntimeError):
    """Raised to stop a trainer that its halter stopped and that cannot be told so (its
    loop is its own), once the run is finished; its message begins with the halter's
    reason (``halted: <rule> critical (...)``). Uncaught, Python exits 1, as ``ppo train
    --halt-on`` does."""


def checked_halter(halter: object) -> Halter | None:
    """``halter`` when it is a :class:`Halter` or None; TypeError naming what it is."""
    if halter is not None and not isinstance(halter, Halter):
        raise TypeError(
            f"halter: needs a telemetry.halting.Halter (such as sanctum.HaltGate), got "
            f"{type(halter).__name__}"
        )
    return halter


class HaltWatch:
    """The protocol's sequence for one halter and the recorder of its run: subscribe it
    before ``run_started`` (:meth:`subscribe`), ask it after each recorded update
    (:meth:`judge`: its anomaly recorded once), finish the run as halted (:meth:`finish`,
    or :meth:`stop`, which then raises :class:`TrainingHalted`)."""

    def __init__(self, halter: Halter) -> None:
        self.halter = halter
        self.reason: str | None = None
        """The halter's reason once the run was judged halted (None until then)."""

    @staticmethod
    def of(halter: object) -> HaltWatch | None:
        """A watch of ``halter`` (checked as :func:`checked_halter` does); None for None."""
        checked = checked_halter(halter)
        return None if checked is None else HaltWatch(checked)

    def subscribe(self, recorder: Recorder) -> None:
        """Hand the halter every event of the run (call it before ``run_started``)."""
        recorder.bus.subscribe(self.halter, name=self.halter.name)

    def judge(self, recorder: Recorder, global_step: int | None) -> str | None:
        """After an update was recorded: the reason to stop once the halter gives one
        (its anomaly recorded at ``global_step`` the first time), else None."""
        if self.reason is None and self.halter.reason is not None:
            self.reason = self.halter.reason
            recorder.emit(self.halter.anomaly(global_step))
        return self.reason

    def finish(self, recorder: Recorder) -> None:
        """Finish the halted run with the halter's status and reason."""
        recorder.finish(self.halter.status, self.reason)

    def stop(self, recorder: Recorder) -> NoReturn:
        """Finish the halted run, then raise :class:`TrainingHalted` with its reason."""
        self.finish(recorder)
        raise TrainingHalted(self.reason)
