"""A rank that dies mid-run (SIGKILL: no chance to say goodbye) ends a two-process run as
failed within the collective timeout, naming the rank; the event log stays whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from sanctum.cli import main as sanctum_main
from telemetry import RunFinished
from tests import processes
from tests.faults.support import WAIT_LIMIT, lines_in, read_whole, trainer_command, wait_until

TIMEOUT = 10
"""collective_timeout_seconds of the run: how long the survivors may wait for the lost rank."""


def test_a_killed_rank_ends_the_run_as_failed_naming_it(tmp_path: Path) -> None:
    extra = ["--nproc", "2", "--set", "rank_trace=true"]
    extra += ["--set", f"collective_timeout_seconds={TIMEOUT}"]
    launcher = processes.popen(
        trainer_command(tmp_path, "ddp", *extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    trace = tmp_path / "ddp" / "ranks" / "rank1.jsonl"
    wait_until(lambda: lines_in(trace) >= 3, "rank 1 to finish three updates")
    pid = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])["pid"]
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    _, err = launcher.communicate(timeout=WAIT_LIMIT)
    assert time.monotonic() - killed < TIMEOUT + 15  # never a hang
    assert launcher.returncode == 1, err
    assert "rank 1 was killed by SIGKILL" in err
    assert "rank 1 stopped answering" in err
    assert "Traceback" not in err

    events, reader = read_whole(tmp_path / "ddp" / "events.jsonl")
    assert reader.skipped_total == 0 and reader.pending_bytes == 0  # every line whole
    finished = [e.payload for e in events if isinstance(e, RunFinished)]
    assert len(finished) == 1 and finished[0].status == "failed"
    assert "rank 1 stopped answering" in (finished[0].reason or "")
    assert sanctum_main(["check", str(tmp_path / "ddp")]) == 1
