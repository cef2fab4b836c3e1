"""Test helpers shipped with the library, so users' tests can write and assert on event logs.

:class:`LogBuilder` writes a real event log through a :class:`~telemetry.Recorder` with a
clock that moves one second per event, so the times in the log are the same on every run;
:func:`capture_events` collects what a bus publishes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from telemetry.bus import Emitter, EventBus
from telemetry.events import (
    SCHEMA_MAJOR,
    Event,
    HeartbeatPayload,
    Payload,
    RunFinishedPayload,
    RunStartedPayload,
    RunStatus,
    TrainerInfo,
    action_space_of,
)
from telemetry.recorder import Recorder

T0 = 1_700_000_000.0
"""Unix time a builder's clock starts from (its first event is one tick later)."""


class TickingClock:
    """A clock that moves ``tick`` seconds each time it is read."""

    def __init__(self, start: float = T0, tick: float = 1.0) -> None:
        self.now = start
        self.tick = tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


class LogBuilder:
    """A real event log on ``path`` for tests, written event by event.

    The log is open from the start and takes any payload in any order (a ``run_started``
    only when :meth:`start` is called), after events already in the file: a second run can
    be appended, and :meth:`raw` adds lines the encoder would never write.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        run_id: str = "run-test",
        t0: float = T0,
        tick: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.clock = TickingClock(t0, tick)
        self.recorder = Recorder(path=self.path, append=True, clock=self.clock)
        # Any string, even one a Recorder refuses as a run id: a test may need a log from
        # another writer (a hostile one included).
        self.recorder.run_id = self.recorder.emitter.run_id = run_id
        self.recorder.open()

    @property
    def now(self) -> float:
        """The time of the latest event; set it to leave a gap before the next one."""
        return self.clock.now

    @now.setter
    def now(self, value: float) -> None:
        self.clock.now = value

    @property
    def emitter(self) -> Emitter:
        return self.recorder.emitter

    @property
    def bus(self) -> EventBus:
        return self.recorder.bus

    def emit(self, payload: Payload) -> Event:
        return self.recorder.emit(payload)

    def start(
        self,
        config: dict[str, object] | None = None,
        *,
        schema: int = SCHEMA_MAJOR,
        env_id: str | None = None,
        seed: int | None = None,
        trainer: TrainerInfo | None = None,
        step_unit: str | None = None,
        action_space: object = None,
    ) -> Event:
        """Write ``run_started`` (``schema``: a newer one makes the log unreadable;
        ``step_unit``: what ``global_step`` counts, None for environment steps;
        ``action_space``: ``discrete``, ``continuous`` or a space, None undeclared)."""
        return self.emit(
            RunStartedPayload(
                schema=schema,
                trainer=trainer or TrainerInfo(name="test"),
                env_id=env_id,
                seed=seed,
                config=dict(config or {}),
                step_unit=step_unit,
                action_space=action_space_of(action_space),
            )
        )

    def beats(self, *steps: int) -> None:
        """One heartbeat per ``global_step`` given."""
        for step in steps:
            self.emit(HeartbeatPayload(global_step=step))

    def finish(
        self, status: RunStatus = "completed", reason: str | None = None, duration: float = 60.0
    ) -> Event:
        """Write ``run_finished``; the log stays open for lines that follow a run's end."""
        payload = RunFinishedPayload(status=status, reason=reason, duration_seconds=duration)
        return self.emit(payload)

    def raw(self, text: str | bytes) -> None:
        """Append ``text`` as is, bypassing the encoder (corrupt lines, unknown kinds)."""
        with self.path.open("ab") as fh:
            fh.write(text.encode() if isinstance(text, str) else text)

    def close(self) -> None:
        """Close the log (without ``run_finished`` unless :meth:`finish` wrote one)."""
        self.recorder.close()


@contextmanager
def capture_events(bus: EventBus) -> Iterator[list[Event]]:
    """Collect every event published on ``bus`` inside the block into the yielded list."""
    captured: list[Event] = []
    unsubscribe = bus.subscribe(captured.append, name="capture_events")
    try:
        yield captured
    finally:
        unsubscribe()
