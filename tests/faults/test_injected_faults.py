"""Faults injected in process, so they run on any machine: a disk that fills part-way
through a line, a checkpoint torch cannot write, a run folder renamed while training."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import torch

from ppo.config import PPOConfig
from ppo.model import checkpoint
from ppo.run.trainer import Progress, Trainer, TrainingStopped
from telemetry.eventlog import EventLogReader, EventLogWriter, LogInUse, writer
from telemetry.events import RunFinished
from telemetry.testing import LogBuilder

SMALL = PPOConfig(num_envs=2, num_steps=32, total_steps=64 * 40, checkpoint_every=5)


def full_disk_after(monkeypatch: pytest.MonkeyPatch, writes: int) -> None:
    """``os.write`` to an event log works ``writes`` times, then writes half a line and
    fails with ENOSPC, as a filling disk does (writes to other files are left alone)."""
    real_write = os.write
    calls = [0]

    def write(fd: int, data: bytes | memoryview) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):
            return real_write(fd, data)
        calls[0] += 1
        if calls[0] <= writes:
            return real_write(fd, data)
        if calls[0] == writes + 1:
            return real_write(fd, bytes(data)[: len(data) // 2])  # a short write
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.os, "write", write)


def test_a_disk_full_in_mid_line_leaves_the_log_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = LogBuilder(tmp_path / "e.jsonl", run_id="run-a")
    log.start()
    full_disk_after(monkeypatch, writes=2)
    log.beats(1, 2)  # the two writes that still fit
    with pytest.raises(Exception, match="No space left"):
        log.beats(3)
    monkeypatch.undo()
    reader = EventLogReader(log.path)
    events = [e for batch in reader.batches() for e in batch.events]
    assert len(events) == 3 and reader.pending_bytes == 0 and reader.skipped_total == 0
    log.beats(4)  # the disk has room again: the log goes on, whole
    assert [e.payload.global_step for e in events[1:]] == [1, 2]
    log.close()


def test_training_stops_with_the_reason_when_the_log_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full_disk_after(monkeypatch, writes=25)
    with pytest.raises(TrainingStopped) as stopped:
        Trainer(SMALL, run_dir=tmp_path, run_id="full").run()
    message = str(stopped.value)
    assert message.startswith("training stopped: could not write the event log ")
    assert "No space left on device" in message and "checkpoint saved to" in message
    monkeypatch.undo()
    reader = EventLogReader(tmp_path / "full" / "events.jsonl")
    events = [e for batch in reader.batches() for e in batch.events]
    assert reader.pending_bytes == 0 and reader.skipped_total == 0
    assert [e.seq for e in events] == list(range(1, 26))  # all 25 written, none torn


def test_a_checkpoint_torch_cannot_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room(obj: object, f: Path) -> None:
        Path(f).write_bytes(b"PK\x03\x04 half")  # what a full disk leaves behind
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")

    monkeypatch.setattr(torch, "save", no_room)
    target = tmp_path / "checkpoints" / "update_000010.pt"
    with pytest.raises(checkpoint.CheckpointError, match="torch could not write it"):
        checkpoint.save(target, {"x": 1})
    assert list(target.parent.iterdir()) == []


def test_resume_finds_the_newest_checkpoint_when_latest_was_left_behind(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "checkpoints"
    checkpoint.save(folder / "update_000010.pt", {"n": 10})
    checkpoint.save(folder / "update_000020.pt", {"n": 20})
    (folder / "latest.pt").unlink()
    assert checkpoint.find(tmp_path / "run").name == "update_000020.pt"
    os.utime(folder / "update_000020.pt", ns=(1, 1))  # older than a latest.pt written after
    checkpoint.save(folder / "latest.pt", {"n": 30})
    assert checkpoint.find(tmp_path / "run").name == "latest.pt"


def test_a_run_folder_renamed_while_training_stops_it_rather_than_split_it(
    tmp_path: Path,
) -> None:
    renamed = tmp_path / "renamed"

    def rename_once(progress: Progress) -> None:
        if progress.updates_done == 2:
            (tmp_path / "moving").rename(renamed)

    with pytest.raises(TrainingStopped, match="was moved, renamed or removed while training"):
        Trainer(SMALL, run_dir=tmp_path, run_id="moving", on_progress=rename_once).run()
    assert not (tmp_path / "moving").exists()  # no second folder under the old name
    reader = EventLogReader(renamed / "events.jsonl")
    events = [e for batch in reader.batches() for e in batch.events]
    assert isinstance(events[-1], RunFinished) and events[-1].payload.status == "failed"


def test_a_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with EventLogWriter(path), pytest.raises(LogInUse, match="another process"):
        EventLogWriter(path)
    EventLogWriter(path).close()  # free again once the first is closed
