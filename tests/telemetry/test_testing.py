"""The shipped test helpers: a Recorder on a fake clock, and the log builder built on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from telemetry import Heartbeat, HeartbeatPayload, Recorder, RunFinished, RunStarted, read_events
from telemetry.testing import T0, LogBuilder, TickingClock, capture_events


def test_a_recorder_on_a_fake_clock_stamps_and_times_the_run_with_it(tmp_path: Path) -> None:
    clock = TickingClock(start=100.0, tick=2.0)
    with Recorder(path=tmp_path / "e.jsonl", run_id="fake", clock=clock) as rec:
        rec.emit(HeartbeatPayload(global_step=1))
    events = read_events(rec.path).events
    assert [e.ts for e in events] == [104.0, 106.0, 110.0]  # start reads the clock once first
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.duration_seconds == 6.0  # 102 -> 108, on the same clock


def test_open_writes_nothing_and_close_leaves_the_run_unfinished(tmp_path: Path) -> None:
    rec = Recorder(path=tmp_path / "e.jsonl", run_id="quiet")
    rec.open()
    assert rec.path.read_bytes() == b""
    rec.emit(HeartbeatPayload(global_step=3))
    rec.close()
    assert [type(e) for e in read_events(rec.path).events] == [Heartbeat]
    with pytest.raises(RuntimeError, match="finished"):
        rec.emit(HeartbeatPayload(global_step=4))


def test_the_builder_writes_repeatable_times_any_run_id_and_raw_lines(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = LogBuilder(path, run_id="run-\x1b[31mred")
    with capture_events(log.bus) as seen:
        log.start({"max_kl": 0.03}, env_id="CartPole-v1")
        log.beats(8, 16)
    log.now += 50.0  # a gap in the recording
    log.beats(24)
    log.raw("not json\n")
    log.finish("failed", "diverged")
    log.close()
    batch = read_events(path)
    assert [e.ts for e in batch.events] == [T0 + 1, T0 + 2, T0 + 3, T0 + 54, T0 + 55]
    assert {e.run_id for e in batch.events} == {"run-\x1b[31mred"}
    assert [e.seq for e in batch.events] == [1, 2, 3, 4, 5]
    assert seen == batch.events[:3]
    started, finished = batch.events[0], batch.events[-1]
    assert isinstance(started, RunStarted) and started.payload.config == {"max_kl": 0.03}
    assert isinstance(finished, RunFinished) and finished.payload.reason == "diverged"
    assert [s.line_no for s in batch.skipped] == [5]


def test_a_second_builder_appends_a_second_run(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    first = LogBuilder(path, run_id="run-a")
    first.start()
    first.close()
    second = LogBuilder(path, run_id="run-b", t0=T0 + 1000)
    second.start()
    second.close()
    assert [(e.run_id, e.ts) for e in read_events(path).events] == [
        ("run-a", T0 + 1),
        ("run-b", T0 + 1001),
    ]
