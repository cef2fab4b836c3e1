"""Following a log while another process appends to it."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path

from telemetry.eventlog import EventLogReader
from telemetry.events import Event, Heartbeat, RunFinished, RunStarted
from telemetry.testing import LogBuilder
from tests import processes
from tests.telemetry.logfiles import steps_of

WRITER = textwrap.dedent(
    """
    import sys, time
    from telemetry import HeartbeatPayload, Recorder
    n = int(sys.argv[2])
    with Recorder(path=sys.argv[1], run_id="child") as rec:
        for i in range(n):
            rec.emit(HeartbeatPayload(global_step=i))
            if i % 50 == 0:
                time.sleep(0.005)
    """
)


def _follow_until_finished(reader: EventLogReader, limit_s: float = 60.0) -> list[Event]:
    events: list[Event] = []
    deadline = time.monotonic() + limit_s  # a safety net against a hang, not a speed check

    def done() -> bool:
        return bool(events and isinstance(events[-1], RunFinished)) or time.monotonic() > deadline

    for batch in reader.follow(poll_interval=0.01, stop=done):
        events.extend(batch.events)
        assert batch.skipped == [] and batch.reset is None
    return events


def test_second_process_appending_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run" / "events.jsonl"
    n = 2000
    child = processes.popen([sys.executable, "-c", WRITER, str(path), str(n)])
    try:
        events = _follow_until_finished(EventLogReader(path))  # the file does not exist yet
    finally:
        child.wait(timeout=60)
    assert child.returncode == 0
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    beats = [e for e in events if isinstance(e, Heartbeat)]
    assert steps_of(beats) == list(range(n))  # nothing lost, order kept
    assert [e.seq for e in events] == list(range(1, n + 3))  # seq without gaps


def test_follow_yields_writes_made_between_polls(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "events.jsonl", run_id="run-a")
    log.beats(0)
    stop = threading.Event()
    seen: list[int] = []

    def append_later() -> None:
        for step in (1, 2, 3):
            time.sleep(0.02)
            log.beats(step)

    writer = threading.Thread(target=append_later)
    writer.start()
    deadline = time.monotonic() + 30
    for batch in EventLogReader(log.path).follow(
        poll_interval=0.005, stop=lambda: stop.is_set() or time.monotonic() > deadline
    ):
        seen += steps_of(batch.events)
        if seen[-1:] == [3]:
            stop.set()
    writer.join()
    log.close()
    assert seen == [0, 1, 2, 3]


def test_follow_stops_when_asked_even_without_a_file(tmp_path: Path) -> None:
    calls = iter([False, False, True])
    reader = EventLogReader(tmp_path / "never.jsonl")
    assert list(reader.follow(poll_interval=0.001, stop=lambda: next(calls))) == []
