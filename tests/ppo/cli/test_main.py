"""``ppo train`` end to end: event log, exit codes, error messages, help; ``python -m ppo``
and Ctrl-C as real processes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from ppo.cli import main
from ppo.exits import EXIT_OK, EXIT_USAGE
from sanctum.cli import main as sanctum_main
from telemetry.eventlog import read_events
from telemetry.events import RunFinished
from tests import processes
from tests.cli_runner import Ran, run_main
from tests.waiting import wait_until

SMALL = ["--set", "num_envs=2", "--set", "num_steps=32", "--set", "hidden_sizes=16"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_headless_train_writes_a_log_with_no_skipped_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["train", "--headless", "--total-steps", "256", "--run-dir", str(tmp_path), *SMALL]
    code, out, _ = run_cli([*args, "--run-id", "r1"], capsys)
    assert code == EXIT_OK
    log = tmp_path / "r1" / "events.jsonl"
    assert f"recording to {log}" in out and f"event log: {log}" in out
    assert "step 256/256 (100%)  updates 4/4" in out  # plain lines when not a terminal
    batch = read_events(log)
    assert batch.skipped == []
    last = batch.events[-1]
    assert isinstance(last, RunFinished) and last.payload.status == "completed"


def test_flags_override_set_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "ppo.toml"
    toml.write_text("seed = 5\nmax_kl = 0.5\n")
    args = [
        "train",
        "--config",
        str(toml),
        "--set",
        "seed=6",
        "--seed",
        "7",
        "--total-steps",
        "64",
        "--run-dir",
        str(tmp_path),
        "--run-id",
        "r",
        *SMALL,
    ]
    assert run_cli(args, capsys)[0] == EXIT_OK
    started = read_events(tmp_path / "r" / "events.jsonl").events[0]
    config = started.payload.config  # type: ignore[union-attr]
    assert (config["seed"], config["max_kl"], config["total_steps"]) == (7, 0.5, 64)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "max_kl=-1"], "max_kl must be finite and > 0 (or none), got -1.0"),
        (["--set", "max_kll=0.1"], "unknown config key 'max_kll' (did you mean 'max_kl'?)"),
        (
            ["--set", "kl_penalty_coefficient=nan"],
            "kl_penalty_coefficient must be finite and >= 0, got nan",
        ),
        (["--total-steps", "0"], "total_steps must be an integer >= 1, got 0"),
        (["--config", "missing.toml"], "missing.toml: no such config file"),
        (["--env", "NoSuchEnv-v0"], "unknown environment id 'NoSuchEnv-v0'"),
        (["--resume", "no/such/run"], "no run at no/such/run"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["train", "--run-dir", str(tmp_path), *args], capsys)
    assert code == EXIT_USAGE
    assert message in err


def test_resume_from_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["train", "--run-dir", str(tmp_path), *SMALL]
    assert run_cli([*base, "--total-steps", "64", "--run-id", "first"], capsys)[0] == EXIT_OK
    args = [
        *base,
        "--resume",
        str(tmp_path / "first"),
        "--total-steps",
        "128",
        "--run-id",
        "second",
    ]
    assert run_cli(args, capsys)[0] == EXIT_OK
    updates = [
        e
        for e in read_events(tmp_path / "second" / "events.jsonl").events
        if type(e).__name__ == "PPOUpdate"
    ]
    assert [e.payload.update for e in updates] == [1]  # type: ignore[union-attr]
    by_id = [*base, "--resume", "first", "--total-steps", "128", "--run-id", "third"]
    assert run_cli(by_id, capsys)[0] == EXIT_OK  # a run id under --run-dir works too
    code, _, err = run_cli(
        [*base, "--resume", str(tmp_path / "first"), "--env", "Acrobot-v1"], capsys
    )
    assert code == EXIT_USAGE and "--resume takes the config from the checkpoint" in err


def test_help_and_python_dash_m() -> None:
    helped = processes.python_m("ppo", "train", "--help")
    assert helped.returncode == EXIT_OK
    out = helped.stdout
    for flag in (
        "--env",
        "--total-steps",
        "--seed",
        "--config",
        "--set",
        "--run-dir",
        "--headless",
        "--resume",
        "examples:",
    ):
        assert flag in out


def test_importing_ppo_without_torch_names_the_extra() -> None:
    code = "import sys; sys.modules['torch'] = None; import ppo"
    proc = processes.run([processes.PYTHON, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "pip install 'sanctum-ppo[train]'" in proc.stderr


def test_ctrl_c_saves_checkpoint_records_interrupted_and_exits_130(tmp_path: Path) -> None:
    args = [
        processes.PYTHON,
        "-m",
        "ppo",
        "train",
        "--headless",
        "--run-dir",
        str(tmp_path),
        "--run-id",
        "r",
        "--total-steps",
        "100000000",
        "--set",
        "heartbeat_seconds=0.5",
    ]
    proc = processes.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "r" / "events.jsonl"
    updated = lambda: log.exists() and b'"ppo_update"' in log.read_bytes()  # noqa: E731
    wait_until(lambda: proc.poll() is not None or updated(), "an update", limit=120)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted; checkpoint saved to" in err and "ppo train --resume" in err
    last = read_events(log).events[-1]
    assert isinstance(last, RunFinished) and last.payload.status == "interrupted"
    assert (tmp_path / "r" / "checkpoints" / "latest.pt").is_file()


def headless_run(tmp_path: Path, total_steps: str) -> Ran:
    """``ppo train --headless`` of ``total_steps`` as run ``r`` under ``tmp_path``: exit 0."""
    args = ["--headless", "--total-steps", total_steps, "--run-dir", str(tmp_path)]
    train = run_main(main, "train", *args, "--run-id", "r", *SMALL)
    assert train.returncode == EXIT_OK, train.stderr
    return train


def test_the_final_line_is_the_final_return_sanctum_reports(tmp_path: Path) -> None:
    """A short real run: the trainer's last figure, ``sanctum diff --json``'s final return
    and ``sanctum summary``'s (text, under the same label, and ``--json``) are one
    definition (telemetry.returns)."""
    train = headless_run(tmp_path, "2048")
    done = next(line for line in train.stdout.splitlines() if line.startswith("done: "))
    label = "final return (mean of the last 20+ episodes) "
    assert label in done
    printed = float(done.split(label)[1])
    run = str(tmp_path / "r")
    diff = run_main(sanctum_main, "diff", run, run, "--json")
    assert diff.returncode == 0, diff.stderr
    final = json.loads(diff.stdout)["returns"]["a"]["final"]
    assert printed == round(final, 2)
    summaries = [run_main(sanctum_main, "summary", run, *flag) for flag in ([], ["--json"])]
    assert [s.returncode for s in summaries] == [0, 0], [s.stderr for s in summaries]
    text = next(line for line in summaries[0].stdout.splitlines() if line.startswith("returns"))
    assert f"{label}{printed:.2f}, best rollout mean " in text, text
    summary_final = json.loads(summaries[1].stdout)["run"]["episode_return_final"]
    assert printed == round(summary_final, 2)


def test_one_update_is_counted_in_the_singular_and_read_as_a_count(tmp_path: Path) -> None:
    """The done line says ``1 update``; progress counts updates done (``updates 1/1``), so
    it is not read against the 0-based index ``sanctum --once`` shows (``update 0``)."""
    train = headless_run(tmp_path, "64")
    lines = train.stdout.splitlines()
    assert any(line.startswith("step 64/64 (100%)  updates 1/1  ") for line in lines), lines
    done = next(line for line in lines if line.startswith("done: "))
    assert done.startswith("done: 64 steps, 1 update in "), done
    once = run_main(sanctum_main, str(tmp_path / "r"), "--once")
    assert " update 0 " in once.stdout.splitlines()[0]


def test_a_run_ends_with_its_verdict_as_sanctum_check_words_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ppo train`` exits 0 for a run that trained to its end; its last line says what the
    gate says of it, in check's words, and where to look."""
    args = ["train", "--headless", "--total-steps", "256", "--run-dir", str(tmp_path), *SMALL]
    code, out, _ = run_cli([*args, "--run-id", "r1"], capsys)
    check = run_main(sanctum_main, "check", str(tmp_path / "r1"))
    assert code == EXIT_OK
    assert out.splitlines()[-1] == (
        f"verdict: {check.stdout.splitlines()[-1]}  (sanctum check {tmp_path / 'r1'})"
    )
