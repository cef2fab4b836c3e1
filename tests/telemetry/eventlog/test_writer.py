"""The writer's one ``os.write`` per line and what follows a short one: the rest of the line
is written (a disk that frees up), or, when that fails too, what was written is taken
back, so the log ends at its last whole event either way."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from telemetry.bus import Emitter, EventBus
from telemetry.eventlog import EventLogWriter, ReadBatch, read_events
from telemetry.events import Heartbeat, HeartbeatPayload


def short_writes(monkeypatch: pytest.MonkeyPatch, answer: Callable[[int, int], int | None]) -> None:
    """``os.write`` to an event log, the ``n``-th call (from 1) on ``data`` of ``size`` bytes,
    writing ``answer(n, size)`` bytes of it (None: all; -1: fails with ENOSPC)."""
    real_write = os.write
    calls = [0]

    def write(fd: int, data: bytes | bytearray | memoryview) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):
            return real_write(fd, data)
        calls[0] += 1
        size = answer(calls[0], len(data))
        if size is None:
            return real_write(fd, data)
        if size < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data)[:size])

    monkeypatch.setattr(os, "write", write)


def emit_beats(path: Path, steps: range) -> None:
    bus = EventBus()
    with EventLogWriter(path) as log:
        bus.subscribe(log)
        emitter = Emitter(bus, "run-a", clock=lambda: 1.0)
        for step in steps:
            emitter.emit(HeartbeatPayload(global_step=step))


def steps(log: ReadBatch) -> list[int]:
    """The step of each heartbeat read, and nothing but heartbeats was read."""
    beats = [e.payload.global_step for e in log.events if isinstance(e, Heartbeat)]
    assert len(beats) == len(log.events)
    return beats


def test_a_short_write_is_finished_and_the_line_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "e.jsonl"
    short_writes(monkeypatch, lambda n, size: 7 if n == 2 else (size - 5 if n == 3 else None))
    emit_beats(path, range(3))
    monkeypatch.undo()
    log = read_events(path)
    assert steps(log) == [0, 1, 2] and log.skipped == [] and path.read_bytes().endswith(b"\n")


def test_a_short_write_that_cannot_be_finished_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "e.jsonl"
    short_writes(monkeypatch, lambda n, size: None if n == 1 else (size // 2 if n == 2 else -1))
    with pytest.raises(Exception, match="No space left on device"):
        emit_beats(path, range(3))
    monkeypatch.undo()
    log = read_events(path)
    assert steps(log) == [0] and log.skipped == [] and path.read_bytes().endswith(b"\n")


def test_a_write_that_fails_at_once_leaves_the_log_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "e.jsonl"
    short_writes(monkeypatch, lambda n, size: None if n == 1 else -1)
    with pytest.raises(Exception, match="No space left on device"):
        emit_beats(path, range(2))
    monkeypatch.undo()
    assert steps(read_events(path)) == [0] and path.read_bytes().endswith(b"\n")
