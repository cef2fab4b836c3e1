"""TrainerProcess on real child processes: exit codes, stderr tail, SIGINT stop, SIGKILL."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sanctum.live.trainer_process import TrainerProcess, describe_exit, tail
from tests.waiting import wait_until

WAIT_LIMIT = 20.0
"""Seconds a test waits for a child before failing (a hang guard, not a timing test)."""

# A stand-in trainer: says it is ready, then works until Ctrl-C, which it records. Like
# ppo train, it takes Ctrl-C even when started with SIGINT ignored (pytest under nohup).
POLITE = """
import pathlib, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
out = pathlib.Path(sys.argv[1])
out.write_text("ready")
try:
    while True:
        time.sleep(0.01)
except KeyboardInterrupt:
    out.write_text("interrupted")
    sys.exit(130)
"""
DEAF = """
import pathlib, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
pathlib.Path(sys.argv[1]).write_text("ready")
while True:
    time.sleep(0.01)
"""


STARTED: list[TrainerProcess] = []
"""The children the running test started: killed at its end, whether it passed or not."""


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test() -> Iterator[None]:
    yield
    while STARTED:
        process = STARTED.pop().process
        if process.poll() is None:
            process.kill()
        process.wait()


def start(tmp_path: Path, code: str, *args: str) -> TrainerProcess:
    trainer = TrainerProcess.start(
        [sys.executable, "-c", code, *args],
        stderr_path=tmp_path / "run" / "trainer.err",
        stdout_path=tmp_path / "run" / "trainer.out",
    )
    STARTED.append(trainer)
    return trainer


def wait_for_text(path: Path, text: str) -> None:
    said = lambda: path.exists() and path.read_text() == text  # noqa: E731
    wait_until(said, f"{path} saying {text!r}", WAIT_LIMIT)


def wait_for_exit(trainer: TrainerProcess) -> None:
    trainer.process.wait(WAIT_LIMIT)


def test_a_crash_reports_its_code_and_the_last_lines_of_stderr(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(10): print(f'line {i}', file=sys.stderr)\nsys.exit(3)"
    trainer = start(tmp_path, code)
    wait_for_exit(trainer)
    ended = trainer.poll()
    assert ended is not None
    assert ended.code == 3 and ended.down and not ended.requested
    assert ended.describe() == "exit code 3"
    assert ended.stderr_tail == tuple(f"line {i}" for i in range(4, 10))
    assert (tmp_path / "run" / "trainer.err").read_text().startswith("line 0\n")


def test_poll_is_none_while_running_and_stop_sends_sigint(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    trainer = start(tmp_path, POLITE, str(marker))
    wait_for_text(marker, "ready")
    assert trainer.poll() is None
    ended = trainer.stop(timeout=WAIT_LIMIT)
    assert marker.read_text() == "interrupted"  # it ran its KeyboardInterrupt handler
    assert ended.code == 130 and ended.requested and not ended.down
    assert trainer.stop_requested


def test_a_child_that_ignores_sigint_is_killed_after_the_timeout(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    trainer = start(tmp_path, DEAF, str(marker))
    wait_for_text(marker, "ready")
    ended = trainer.stop(timeout=0.3)
    assert ended.code == -9
    assert ended.describe() == "killed by SIGKILL"
    assert not ended.down  # the user asked for it


def test_a_killed_child_is_down(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    trainer = start(tmp_path, POLITE, str(marker))
    wait_for_text(marker, "ready")
    trainer.process.kill()
    wait_for_exit(trainer)
    ended = trainer.poll()
    assert ended is not None and ended.down and ended.describe() == "killed by SIGKILL"


def test_the_child_runs_in_its_own_session_with_stdout_in_a_file(tmp_path: Path) -> None:
    trainer = start(tmp_path, "import os; print(os.getsid(0))")
    wait_for_exit(trainer)
    child_session = int((tmp_path / "run" / "trainer.out").read_text())
    assert child_session == trainer.pid != os.getsid(0)


def test_tail_skips_blank_lines_and_survives_bad_bytes_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "err"
    path.write_bytes(b"a\n\n  \nb \xff\nc\n")
    assert tail(path, 2) == ("b \ufffd", "c")
    assert tail(path, 0) == ()
    assert tail(tmp_path / "missing") == ()


def test_describe_exit_names_unknown_signals_by_number() -> None:
    assert describe_exit(0) == "exit code 0"
    assert describe_exit(-2) == "killed by SIGINT"
    assert describe_exit(-200) == "killed by signal 200"


def test_wait_returns_none_while_running_and_the_exit_after(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    trainer = start(tmp_path, POLITE, str(marker))
    wait_for_text(marker, "ready")
    assert trainer.wait(0.05) is None
    trainer.interrupt()
    ended = trainer.wait(WAIT_LIMIT)
    assert ended is not None and ended.code == 130 and ended.requested


def test_stopping_a_child_that_already_ended_keeps_its_own_exit(tmp_path: Path) -> None:
    trainer = start(tmp_path, "import sys; sys.exit(0)")
    wait_for_exit(trainer)
    ended = trainer.stop(timeout=WAIT_LIMIT)
    assert ended.code == 0 and not ended.requested and not trainer.stop_requested
