"""Recorder: run_started on enter, run_finished with the right status on exit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from telemetry import (
    EventLogWriter,
    PPOUpdatePayload,
    Recorder,
    RolloutPayload,
    RunFinished,
    RunStarted,
    SinkError,
    read_events,
)
from telemetry.recorder import FINISH_RESERVE


def _finished(path: Path) -> RunFinished:
    last = read_events(path).events[-1]
    assert isinstance(last, RunFinished)
    return last


def test_default_layout_and_completed_run(tmp_path: Path) -> None:
    with Recorder(run_dir=tmp_path, env_id="CartPole-v1", seed=3, config={"max_kl": 0.03}) as rec:
        rec.emit(RolloutPayload(update=0, global_step=512, episodes=2, episode_return_mean=20.0))
        rec.emit(
            PPOUpdatePayload(
                update=0, global_step=512, approx_kl=0.01, clip_fraction=0.1, early_stopped=False
            )
        )
    assert rec.path == tmp_path / rec.run_id / "events.jsonl"
    assert rec.run_id.startswith("CartPole-v1-")
    events = read_events(rec.path).events
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.env_id == "CartPole-v1" and started.payload.seed == 3
    assert started.payload.config == {"max_kl": 0.03}
    assert started.payload.pid == os.getpid() and started.payload.host
    finished = _finished(rec.path)
    assert finished.payload.status == "completed" and finished.payload.reason is None
    assert (finished.payload.global_step, finished.payload.updates) == (512, 1)
    assert [e.seq for e in events] == [1, 2, 3, 4]


def test_exception_records_failed_with_summary_and_propagates(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with pytest.raises(ValueError, match="loss exploded"), Recorder(path=path):
        raise ValueError("loss exploded")
    finished = _finished(path)
    assert finished.payload.status == "failed"
    assert finished.payload.reason == "ValueError: loss exploded"


def test_keyboard_interrupt_records_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with pytest.raises(KeyboardInterrupt), Recorder(path=path):
        raise KeyboardInterrupt
    assert _finished(path).payload.status == "interrupted"


def test_explicit_finish_is_final(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with Recorder(path=path) as rec:
        rec.finish("interrupted", "stop requested from the dashboard")
    events = read_events(path).events
    assert sum(isinstance(e, RunFinished) for e in events) == 1
    assert _finished(path).payload.reason == "stop requested from the dashboard"


def test_fsync_option_writes_the_same_lines(tmp_path: Path) -> None:
    with Recorder(path=tmp_path / "a.jsonl", run_id="r", fsync_every=0.0) as rec:
        rec.emit(RolloutPayload(update=0, global_step=1))
    assert len(read_events(tmp_path / "a.jsonl").events) == 3


def test_disk_full_is_a_sink_error_naming_the_file() -> None:
    # /dev/full accepts open() and fails every write with ENOSPC, like a full disk.
    rec = Recorder(path="/dev/full", run_id="r")
    with pytest.raises(SinkError, match=r"eventlog:/dev/full.*No space left on device"):
        rec.start()
    assert not Path("/dev/.full.reserve").exists()  # a device gets no file beside it


def test_room_for_run_finished_is_held_beside_the_log_until_the_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    reserve = tmp_path / ".e.jsonl.reserve"
    with Recorder(path=path) as rec:
        assert reserve.stat().st_size == FINISH_RESERVE
        rec.emit(RolloutPayload(update=0, global_step=1))
    assert not reserve.exists() and _finished(path).payload.status == "completed"


def test_closed_writer_refuses_and_says_so(tmp_path: Path) -> None:
    writer = EventLogWriter(tmp_path / "e.jsonl")
    writer.close()
    writer.close()  # idempotent
    with Recorder(path=tmp_path / "other.jsonl") as rec:
        unsubscribe = rec.bus.subscribe(writer)
        with pytest.raises(SinkError, match="writer is closed"):
            rec.emit(RolloutPayload(update=0, global_step=1))
        unsubscribe()
    assert len(read_events(tmp_path / "other.jsonl").events) == 3  # the good sink kept all


def test_emit_outside_the_run_is_an_error_not_a_silent_drop(tmp_path: Path) -> None:
    rec = Recorder(path=tmp_path / "e.jsonl")
    with pytest.raises(RuntimeError, match=r"RolloutPayload\) on a recorder that is not started"):
        rec.emit(RolloutPayload(update=0, global_step=1))
    with rec:
        pass
    with pytest.raises(RuntimeError, match="that is finished"):
        rec.emit(RolloutPayload(update=0, global_step=1))


def test_an_existing_log_is_never_appended_to_by_accident(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with Recorder(path=path, run_id="first"):
        pass
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="an event log is already there"):
        Recorder(path=path, run_id="second").start()
    assert path.read_bytes() == before
    with Recorder(path=path, run_id="second", append=True):
        pass
    assert [e.run_id for e in read_events(path).events] == ["first"] * 2 + ["second"] * 2
