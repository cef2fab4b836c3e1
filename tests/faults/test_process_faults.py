"""Faults a real run meets, on the real ``ppo train`` and ``sanctum`` processes: kill -9,
SIGTERM, a full disk, two writers racing for one log, and a log replaced under a live
reader. Nothing emitted before the fault is lost; every outcome is one clear line and the
documented exit code."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from telemetry.events import RunFinished, RunStarted
from tests import processes

from .support import (
    WAIT_LIMIT,
    finish,
    lines_in,
    read_whole,
    run,
    start_trainer,
    trainer_command,
    wait_until,
)

pytestmark = pytest.mark.slow


def assert_one_clear_line(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr


def test_kill_9_mid_run_loses_no_event_and_tears_no_line(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "killed")
    log = tmp_path / "killed" / "events.jsonl"
    wait_until(lambda: lines_in(log) > 150, "150 lines")
    code, _ = finish(trainer, signal.SIGKILL)
    assert code == -signal.SIGKILL
    events, reader = read_whole(log)
    assert reader.skipped_total == 0 and reader.pending_bytes == 0  # every line whole
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # nothing missing
    assert not isinstance(events[-1], RunFinished)
    unfinished = run(["-m", "sanctum", "check", str(log.parent), "--allow-unfinished"])
    assert unfinished.returncode == 0, unfinished.stdout
    judged = run(["-m", "sanctum", "check", str(log.parent)])
    assert judged.returncode == 1 and "no run_finished" in judged.stdout


def test_sigterm_checkpoints_records_interrupted_and_exits_143(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "termed")
    log = tmp_path / "termed" / "events.jsonl"
    wait_until(lambda: lines_in(log) > 100, "100 lines")
    code, err = finish(trainer, signal.SIGTERM)
    assert code == 143
    assert_one_clear_line(err)
    assert err.strip().startswith("stopped by SIGTERM; checkpoint saved to ")
    events, _ = read_whole(log)
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert (last.payload.status, last.payload.reason) == ("interrupted", "SIGTERM")
    assert (tmp_path / "termed" / "checkpoints" / "latest.pt").is_file()


def test_sighup_is_handled_like_sigterm(tmp_path: Path) -> None:
    trainer = start_trainer(tmp_path, "hung")
    log = tmp_path / "hung" / "events.jsonl"
    wait_until(lambda: lines_in(log) > 20, "20 lines")
    code, err = finish(trainer, signal.SIGHUP)
    assert code == 129 and err.strip().startswith("stopped by SIGHUP")
    events, _ = read_whole(log)
    assert isinstance(events[-1], RunFinished) and events[-1].payload.reason == "SIGHUP"


def test_sigint_works_when_the_shell_started_the_trainer_with_it_ignored(tmp_path: Path) -> None:
    """``cmd &`` in a script leaves SIGINT ignored; the documented ``kill -INT`` must work."""
    trainer = start_trainer(
        tmp_path, "bg", preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    )
    log = tmp_path / "bg" / "events.jsonl"
    wait_until(lambda: lines_in(log) > 20, "20 lines")
    code, err = finish(trainer, signal.SIGINT)
    assert code == 130 and err.strip().startswith("interrupted; checkpoint saved to")
    events, _ = read_whole(log)
    assert isinstance(events[-1], RunFinished) and events[-1].payload.status == "interrupted"


def test_two_writers_racing_for_one_log_leave_one_run(tmp_path: Path) -> None:
    first = start_trainer(tmp_path, "race", "--total-steps", "60000")
    second = start_trainer(tmp_path, "race", "--total-steps", "60000")
    outcomes = sorted((p.communicate(timeout=WAIT_LIMIT)[1], p) for p in (first, second))
    outcomes = sorted((p.returncode, err) for err, p in outcomes)
    (ok, _), (refused, err) = outcomes
    assert (ok, refused) == (0, 2)
    assert_one_clear_line(err)
    assert "race" in err and ("another process is writing" in err or "already holds" in err)
    events, reader = read_whole(tmp_path / "race" / "events.jsonl")
    assert reader.skipped_total == 0
    assert sum(isinstance(e, RunStarted) for e in events) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_stops_training_with_one_line_and_a_whole_log(tmp_path: Path) -> None:
    disk = tmp_path / "small-disk"
    disk.mkdir()
    mounted = processes.run(["mount", "-t", "tmpfs", "-o", "size=100k", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("this machine refuses to mount a tmpfs")
    try:
        command = trainer_command(disk, "full", "--set", "checkpoint_every=0")
        done = run(command[1:])
        assert done.returncode == 1
        assert_one_clear_line(done.stderr)
        assert done.stderr.startswith("ppo train: training stopped: could not write the event log")
        events, reader = read_whole(disk / "full" / "events.jsonl")
        assert reader.skipped_total == 0 and reader.pending_bytes == 0  # no torn last line
        *recorded, last = events
        assert [e.seq for e in recorded] == list(range(1, len(recorded) + 1))  # nothing lost
        # the event the disk refused is not in the log; its seq is the one gap, and the
        # end of the run is recorded after it
        assert isinstance(last, RunFinished) and last.payload.status == "failed"
        assert last.seq == len(recorded) + 2
        assert not list((disk / "full" / "checkpoints").glob("*.tmp"))
    finally:
        processes.run(["umount", str(disk)], check=False)


def test_a_log_replaced_under_a_live_reader_is_read_again_from_the_start(tmp_path: Path) -> None:
    """``sanctum summary`` of a run moved aside and started again: the reader follows the
    new file, never the old one's offset."""
    trainer = start_trainer(tmp_path, "again")
    log = tmp_path / "again" / "events.jsonl"
    wait_until(lambda: lines_in(log) > 50, "50 lines")
    from telemetry.eventlog import EventLogReader

    live = EventLogReader(log)
    first = [e for batch in live.batches() for e in batch.events]
    finish(trainer, signal.SIGKILL)
    shutil.move(tmp_path / "again", tmp_path / "again-old")  # replaced: a new run, same path
    second = start_trainer(tmp_path, "again", "--total-steps", "5000", "--seed", "9")
    second.communicate(timeout=WAIT_LIMIT)
    resets = [b.reset for b in live.batches() if b.reset]
    assert resets and "replaced" in resets[0]
    events, _ = read_whole(log)
    started = [e for e in events if isinstance(e, RunStarted)]
    assert len(started) == 1 and started[0].payload.seed == 9
    assert len(first) > 50
