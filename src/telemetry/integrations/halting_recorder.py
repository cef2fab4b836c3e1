"""A recorder whose halter stops its run: what the integrations that cannot tell their
trainer to stop record into when given a halter (the CleanRL recorder, the probe and the
integrations built on it).

The halter is subscribed when the recorder is built, so it sees ``run_started``. After each
update is recorded, :func:`stop_if_halted` asks it: once its reason is set, the run records
the halter's anomaly, finishes with its status and reason (``failed``, ``halted: <rule>
critical (...)``) and :class:`~telemetry.halting.TrainingHalted` is raised out of the
trainer's loop (uncaught, Python exits 1, as ``ppo train --halt-on`` does); the recorder's
``with`` block then leaves the finished run as it is. A plain :class:`Recorder` is never
stopped, so whoever records updates calls :func:`stop_if_halted` whatever it was given.
"""

from __future__ import annotations

from typing import Any

from telemetry.halting import Halter, HaltWatch, checked_halter
from telemetry.recorder import Recorder


class HaltingRecorder(Recorder):
    """A :class:`Recorder` that ``halter`` judges (the other keywords are the Recorder's)."""

    def __init__(self, halter: Halter, **recorder: Any) -> None:
        super().__init__(**recorder)
        self.halting = HaltWatch(halter)
        self.halting.subscribe(self)  # before run_started: it judges the whole run


def recorder_for(halter: Halter | None, **recorder: Any) -> Recorder:
    """A :class:`HaltingRecorder` with a halter (checked: TypeError naming what it got), a
    plain :class:`Recorder` without; the other keywords are the Recorder's."""
    checked = checked_halter(halter)
    return Recorder(**recorder) if checked is None else HaltingRecorder(checked, **recorder)


def stop_if_halted(recorder: Recorder, global_step: int) -> None:
    """After an update was recorded into ``recorder``: when it is a
    :class:`HaltingRecorder` whose halter gives a reason, record the halter's anomaly at
    ``global_step``, finish the run and raise
    :class:`~telemetry.halting.TrainingHalted`; nothing otherwise."""
    if not isinstance(recorder, HaltingRecorder) or recorder.finished:
        return
    if recorder.halting.judge(recorder, global_step) is not None:
        recorder.halting.stop(recorder)
