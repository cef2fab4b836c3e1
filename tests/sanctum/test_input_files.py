"""Every file sanctum reads goes through the one opener (``telemetry.files``): a FIFO, a
device or a folder where a thresholds file, a mapping file, a TensorBoard event file, a
rollouts file or a trainer's output is expected is one line and exit 2 at once (a
blocking open of a FIFO with no writer used to hang forever, ``/dev/zero`` to be read
until memory ran out), and nesting deeper than TOML needs is one line, not a traceback.

Commands run in a subprocess with a timeout: on a hang the test fails, it never hangs.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from telemetry.testing import LogBuilder
from tests import processes

HANG = 60
"""Seconds after which a command is taken to hang (they answer in well under one)."""


def sanctum(*argv: str | Path) -> tuple[int, str]:
    """(exit code, stderr) of ``python -m sanctum ARGV``; fails the test on a hang."""
    try:
        done = processes.run(
            [sys.executable, "-m", "sanctum", *map(str, argv)],
            capture_output=True,
            text=True,
            timeout=HANG,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"sanctum {' '.join(map(str, argv))} hung")
    return done.returncode, done.stderr


def python(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter; fails the test on a hang."""
    try:
        done = processes.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG, check=True
        )
    except subprocess.TimeoutExpired:
        pytest.fail("hung")
    return done.stdout


def one_line(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.fixture
def run(tmp_path: Path) -> Path:
    log = LogBuilder(tmp_path / "run" / "events.jsonl", run_id="run-a")
    log.start()
    log.beats(1)
    log.finish()
    log.close()
    return log.path


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.toml"
    os.mkfifo(path)  # nobody ever writes to it
    return path


@pytest.mark.parametrize("command", ["check", "summary"])
def test_thresholds_that_are_not_a_regular_file_are_one_line(
    run: Path, fifo: Path, tmp_path: Path, command: str
) -> None:
    assert "it is a pipe (FIFO)" in one_line(*sanctum("--thresholds", fifo, command, run))
    assert "it is a device" in one_line(*sanctum("--thresholds", "/dev/zero", command, run))
    assert "it is a folder" in one_line(*sanctum("--thresholds", tmp_path, command, run))


def test_thresholds_nested_past_the_limit_are_one_line(run: Path, tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    err = one_line(*sanctum("--thresholds", deep, "check", run))
    assert "nested more than 16 tables or arrays deep" in err
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (2 << 20) + "\n")
    assert "larger than the 1 MiB limit" in one_line(*sanctum("--thresholds", big, "check", run))


def test_a_fifo_as_the_trainer_output_leaves_the_tail_empty(fifo: Path) -> None:
    code = "from pathlib import Path\nfrom sanctum.live.trainer_process import tail\n"
    code += f"print(tail(Path({str(fifo)!r})))"
    assert python(code).strip() == "()"


def test_a_fifo_as_the_rollouts_file_is_one_line(fifo: Path) -> None:
    code = (
        "from telemetry.rollouts import iter_records\n"
        "from telemetry.files import InputFileError\n"
        "try:\n"
        f"    iter_records({str(fifo)!r})\n"
        "except InputFileError as exc:\n"
        "    print(exc)\n"
    )
    assert python(code).strip().endswith("cannot read rollouts file: it is a pipe (FIFO)")


needs_tensorboard = pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None or importlib.util.find_spec("torch") is None,
    reason="needs the tensorboard extra (and torch to write a log)",
)


@needs_tensorboard
def test_a_fifo_as_the_tensorboard_map_is_one_line(fifo: Path, tmp_path: Path) -> None:
    from tests.sanctum.importers.test_tensorboard import write_tb

    logdir = tmp_path / "tb"
    write_tb(logdir, {"my/kl": [(100, 0.01)], "my/clip": [(100, 0.1)]}, 1.7e9)
    out = tmp_path / "out"
    err = one_line(*sanctum("import", "tensorboard", logdir, "--out", out, "--map", fifo))
    assert "it is a pipe (FIFO)" in err
    err = one_line(*sanctum("import", "tensorboard", logdir, "--out", out, "--map", "/dev/zero"))
    assert "it is a device" in err


@needs_tensorboard
def test_an_event_file_that_is_a_fifo_is_one_line(tmp_path: Path) -> None:
    from tests.sanctum.importers.test_tensorboard import write_tb

    logdir = tmp_path / "tb"
    write_tb(logdir, {"train/approx_kl": [(100, 0.01)], "train/clip_fraction": [(100, 0.1)]}, 1.7e9)
    os.mkfifo(logdir / "events.out.tfevents.0.fifo")  # TensorBoard would open it and wait
    err = one_line(*sanctum("import", "tensorboard", logdir, "--out", tmp_path / "out"))
    assert "events.out.tfevents.0.fifo: cannot read TensorBoard event file: it is a pipe" in err


@pytest.mark.parametrize("logdir", ["fifo", "/dev/zero"])
def test_a_tensorboard_logdir_that_is_a_pipe_or_a_device_is_one_line(
    logdir: str, fifo: Path
) -> None:
    err = one_line(*sanctum("import", "tensorboard", fifo if logdir == "fifo" else logdir))
    assert "not a folder of TensorBoard logs nor an event file" in err


def test_a_junit_file_that_is_a_pipe_no_one_reads_is_one_line_not_a_hang(
    run: Path, fifo: Path
) -> None:
    err = one_line(*sanctum("check", run, "--junit", fifo))
    assert err.endswith(f"cannot write JUnit file {fifo}: it is a pipe no one reads\n")


def _with_stdout(argv: list[str], stdout: int | None, close: bool = False) -> tuple[int, str]:
    done = processes.run(
        [sys.executable, "-m", "sanctum", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=HANG,
        check=False,
        preexec_fn=(lambda: os.close(1)) if close else None,
    )
    return done.returncode, done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "argv", [["check"], ["summary"], ["summary", "--json"], ["--once"], ["--once", "--json"]]
)
def test_a_report_standard_output_cannot_take_is_one_line_and_exit_2(
    argv: list[str], run: Path
) -> None:
    """``> /dev/full`` and a closed stdout: the report was not delivered, so the command
    could not do its job (exit 2), said in one line, never a traceback."""
    args = [*argv[:1], str(run), *argv[1:]] if argv[0] != "--once" else [str(run), *argv]
    with open("/dev/full", "w") as full:
        err = one_line(*_with_stdout(args, full.fileno()))
    assert err.endswith("cannot write the report to standard output: No space left on device\n")
    err = one_line(*_with_stdout(args, None, close=True))
    assert "cannot write the report to standard output" in err
