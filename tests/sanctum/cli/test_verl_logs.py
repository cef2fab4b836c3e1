"""``sanctum check``, ``summary`` and ``--once`` on verl file logger lines, through the real
console script: the exit codes and the one line a CI log shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.sanctum.cli.test_cli import run_sanctum
from tests.telemetry.integrations.verl_logs import FileLogger, grpo_step, write_verl_run

KL_BLOWUP = {"actor/ppo_kl": 0.5, "actor/pg_clipfrac": 0.0}
"""verl's k1 to the old policy far past the KL rule, with nothing clipped."""


def test_a_healthy_grpo_run_passes(tmp_path: Path) -> None:
    path = write_verl_run(tmp_path / "qwen_grpo.jsonl", 12)
    result = run_sanctum("check", path)
    assert (result.returncode, result.stdout.splitlines()[-1]) == (0, "OK")
    assert "run qwen_grpo, 12 updates" in result.stdout


def test_the_gate_says_a_verl_log_cannot_show_its_end_and_judges_it_as_it_stands(
    tmp_path: Path,
) -> None:
    """verl's file logger writes no end of run: the finish row says so and passes, since
    the source cannot say more; every other row judges what the lines say."""
    result = run_sanctum("check", write_verl_run(tmp_path / "exp.jsonl", 12))
    assert (result.returncode, result.stdout.splitlines()[-1]) == (0, "OK")
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("pass  finished")]
    assert "verl's file logger records no end of run" in row
    assert "judged as it stands, 12 updates" in row


def test_a_nan_grad_norm_fails_the_run(tmp_path: Path) -> None:
    nan = {"actor/grad_norm": float("nan")}  # orjson writes it as null
    path = write_verl_run(tmp_path / "exp.jsonl", 12, step_6=nan)
    result = run_sanctum("check", path)
    assert (result.returncode, result.stdout.splitlines()[-1]) == (
        1,
        "FAIL: Grad 1x, non-finite 1x",
    )


def test_verls_kl_to_the_old_policy_blowing_up_fails_the_kl_rule(tmp_path: Path) -> None:
    path = write_verl_run(
        tmp_path / "exp.jsonl", 12, **{f"step_{s}": KL_BLOWUP for s in range(5, 13)}
    )
    result = run_sanctum("check", path)
    assert (result.returncode, result.stdout.splitlines()[-1]) == (1, "FAIL: KL 6x")


def test_a_garbage_line_fails_the_gate_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    logger = FileLogger(path)
    for step in (1, 2):
        logger.log(grpo_step(step), step=step)
    logger.fp.write(b"CUDA error: out of memory\n")
    logger.log(grpo_step(4), step=4)
    logger.finish()
    result = run_sanctum("check", path)
    assert (result.returncode, result.stdout.splitlines()[-1]) == (1, "FAIL: unreadable 1x")
    assert "line 3: not a verl file logger record" in result.stdout
    allowed = run_sanctum("check", "--allow-skipped", path)
    assert allowed.returncode == 0


def test_a_file_of_garbage_is_refused_in_one_line_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    path.write_bytes(b"CUDA error: out of memory\n")
    result = run_sanctum("check", path)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"sanctum: error: {path}: no run_started event in 1 line")
    assert line.endswith(
        "; line 1: not a JSON event object: JSON is malformed: invalid character (byte 0)"
    )


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "exp.jsonl"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    for command in (["check", "--allow-unfinished"], ["summary"], ["--once"]):
        result = run_sanctum(*command, path)
        assert result.returncode == 2, command
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"sanctum: error: {path}: cannot read event log: it is a ")


def test_summary_and_once_read_a_verl_run(tmp_path: Path) -> None:
    path = write_verl_run(tmp_path / "exp.jsonl", 6)
    summary = run_sanctum("summary", path)
    assert summary.returncode == 0
    assert "exp (trainer verl, schema 1)" in summary.stdout
    assert "6 updates" in summary.stdout
    once = run_sanctum("--once", path)
    assert once.returncode == 0
    assert "run exp started (trainer verl)" in once.stdout


@pytest.mark.parametrize("allow", [[], ["--allow-unfinished"]], ids=["plain", "allow-unfinished"])
def test_steps_missing_from_the_file_are_lost_updates_that_fail_the_gate(
    tmp_path: Path, allow: list[str]
) -> None:
    """Steps 1..9, then 30..32: 20 updates the file does not hold, which no skipped line
    accounts for. The gate never passes what it did not see."""
    path = tmp_path / "exp.jsonl"
    with FileLogger(path) as logger:
        for step in (*range(1, 10), 30, 31, 32):
            logger.log(grpo_step(step), step=step)
    result = run_sanctum("check", *allow, path)
    assert result.returncode == 1, result.stdout
    lost = [line for line in result.stdout.splitlines() if line.startswith("FAIL  lost events")]
    assert lost and "20 events missing" in lost[0], result.stdout
    steady = tmp_path / "steady.jsonl"
    with FileLogger(steady) as logger:  # validation lines between steps are no gap
        for step in range(1, 13):
            logger.log(grpo_step(step), step=step)
    assert run_sanctum("check", *allow, steady).returncode == 0
