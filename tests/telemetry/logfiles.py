"""Small helpers that write real event logs for reader tests."""

from __future__ import annotations

from pathlib import Path

from telemetry.bus import Emitter, EventBus
from telemetry.eventlog import EventLogWriter
from telemetry.events import HeartbeatPayload, RunStartedPayload, TrainerInfo


class LogBuilder:
    """An Emitter wired to a real EventLogWriter on ``path``."""

    def __init__(self, path: Path, run_id: str = "run-a") -> None:
        self.path = path
        self.writer = EventLogWriter(path)
        self.bus = EventBus()
        self.bus.subscribe(self.writer)
        self.emitter = Emitter(self.bus, run_id)

    def start(self) -> None:
        self.emitter.emit(RunStartedPayload(trainer=TrainerInfo(name="test")))

    def beats(self, *steps: int) -> None:
        for step in steps:
            self.emitter.emit(HeartbeatPayload(global_step=step))

    def raw(self, text: str) -> None:
        """Append raw bytes, bypassing the encoder."""
        with self.path.open("a") as f:
            f.write(text)

    def close(self) -> None:
        self.writer.close()


def steps_of(events: list[object]) -> list[int]:
    return [e.payload.global_step for e in events]  # type: ignore[attr-defined]
