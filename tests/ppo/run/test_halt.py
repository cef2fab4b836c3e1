"""``ppo train --halt-on critical``: a real run stops itself at the end of the update whose
health goes critical, saves a checkpoint, records the stop naming the rule, and exits 1;
``sanctum check`` fails the log naming the same rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo.cli import build_parser, main
from ppo.cli.attach import child_command
from ppo.exits import EXIT_USAGE
from ppo.run import halt
from sanctum.cli import main as sanctum_main
from telemetry import Anomaly, PPOUpdate, RunFinished, read_events
from tests import processes
from tests.cli_runner import Ran, run_main

SMALL = ["--set", "num_envs=2", "--set", "num_steps=32", "--set", "hidden_sizes=16"]
WARMUP = 3
"""The test rule judges from this update on, so it fires mid-run, not at the first update."""
VALUE_LOSS_RULE = f"""\
[value_loss]
direction = "above"
statistic = "value"
warning = 0.000001
critical = 0.00001
warmup_updates = {WARMUP}
"""
"""The value-loss rule made one every CartPole run breaks at once: its value loss is far
above 1e-5."""


def _ppo(*args: str, cwd: Path) -> Ran:
    """``ppo train --headless ARGS`` from ``cwd``, in this process; ``--nproc`` as a real
    process (it starts its ranks)."""
    argv = ["train", "--headless", *args]
    if "--nproc" not in args:
        return run_main(main, *argv, cwd=cwd)
    done = processes.python_m("ppo", *argv, cwd=cwd, timeout=240)
    return Ran(done.returncode, done.stdout, done.stderr)


def _sanctum_check(run: Path, thresholds: Path) -> Ran:
    return run_main(sanctum_main, "check", run, "--thresholds", thresholds)


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(VALUE_LOSS_RULE, encoding="utf-8")
    return path


def _assert_halted(run: Path, rules: Path, fired_at: int) -> RunFinished:
    """The log of a halted run: the updates up to the firing one, the critical anomaly
    naming the rule, run_finished failed naming it; ``sanctum check`` fails on it."""
    events = read_events(run / "events.jsonl").events
    updates = [e.payload.update for e in events if isinstance(e, PPOUpdate)]
    assert updates == list(range(fired_at + 1))  # stopped at the end of the firing update
    (anomaly,) = [e.payload for e in events if isinstance(e, Anomaly)]
    assert anomaly.severity == "critical" and anomaly.metric == "value_loss"
    assert anomaly.update == fired_at
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason is not None
    assert finished.payload.reason.startswith("halted: Value loss critical (Value loss reached")
    check = _sanctum_check(run, rules)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "FAIL: Value loss" in check.stdout
    return finished


def test_a_run_halts_at_the_update_a_rule_goes_critical(tmp_path: Path, rules: Path) -> None:
    args = ["--total-steps", "1024", "--run-dir", "runs", "--run-id", "r", *SMALL]
    done = _ppo(*args, "--halt-on", "critical", "--thresholds", str(rules), cwd=tmp_path)
    assert done.returncode == halt.EXIT_HALTED == 1, done.stderr
    assert "Traceback" not in done.stderr
    run = tmp_path / "runs" / "r"
    finished = _assert_halted(run, rules, fired_at=WARMUP)
    assert finished.payload.updates == WARMUP + 1  # of the 16 the run would have taken
    assert (run / "checkpoints" / f"update_{WARMUP + 1:06d}.pt").is_file()
    assert "ppo train: halted: Value loss critical" in done.stderr
    assert f"checkpoint saved to runs/r/checkpoints/update_{WARMUP + 1:06d}.pt" in done.stderr


def test_without_halt_on_the_same_run_completes(tmp_path: Path, rules: Path) -> None:
    """The rule is broken all along: only --halt-on stops the run."""
    args = ["--total-steps", "256", "--run-dir", "runs", "--run-id", "r", *SMALL]
    done = _ppo(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _sanctum_check(tmp_path / "runs" / "r", rules).returncode == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--thresholds", "rules.toml"], "--thresholds: used only to halt; give --halt-on"),
        (["--halt-on", "critical", "--thresholds", "missing.toml"], "missing.toml"),
        (["--halt-on", "critical", "--thresholds", "bad.toml"], "bad.toml: nope: unknown key"),
    ],
)
def test_unusable_halt_options_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "rules.toml").write_text(VALUE_LOSS_RULE, encoding="utf-8")
    (tmp_path / "bad.toml").write_text("nope = 1\n", encoding="utf-8")
    done = _ppo("--total-steps", "64", "--run-dir", "runs", *args, cwd=tmp_path)
    assert done.returncode == EXIT_USAGE
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_unknown_level_is_refused_by_the_parser() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["train", "--halt-on", "never"])
    assert exc.value.code == EXIT_USAGE


def test_the_dashboard_child_gets_the_halt_options() -> None:
    args = build_parser().parse_args(
        ["train", "--halt-on", "warning", "--thresholds", "rules.toml"]
    )
    command = child_command(args, "r")
    assert command[command.index("--halt-on") + 1] == "warning"
    assert command[command.index("--thresholds") + 1] == "rules.toml"


TOKENS_SHORT = [
    "--set", "updates=8", "--set", "rollouts_per_update=16", "--set", "warm_start_steps=20",
    "--set", "max_new_tokens=7",
]  # fmt: skip


def test_a_token_level_run_halts_too(tmp_path: Path, rules: Path) -> None:
    config = Path(__file__).parents[3] / "examples" / "token_ppo.toml"
    args = ["--config", str(config), "--run-dir", "runs", "--run-id", "t", *TOKENS_SHORT]
    done = _ppo(*args, "--halt-on", "critical", "--thresholds", str(rules), cwd=tmp_path)
    assert done.returncode == halt.EXIT_HALTED, done.stderr
    assert "ppo train: halted: Value loss critical" in done.stderr
    assert "stopped after 4 updates" in done.stderr
    finished = _assert_halted(tmp_path / "runs" / "t", rules, fired_at=WARMUP)
    assert finished.payload.updates == WARMUP + 1


@pytest.mark.slow
def test_two_ranks_halt_together(tmp_path: Path, rules: Path) -> None:
    """Rank 0 judges; rank 1 stops at the same update (else the job would hang or die on a
    collective), and the launcher exits 1."""
    args = ["--nproc", "2", "--total-steps", "2048", "--run-dir", "runs", "--run-id", "d"]
    args += ["--set", "num_envs=2", "--set", "num_steps=32", "--set", "hidden_sizes=16"]
    done = _ppo(*args, "--halt-on", "critical", "--thresholds", str(rules), cwd=tmp_path)
    assert done.returncode == halt.EXIT_HALTED, done.stderr
    run = tmp_path / "runs" / "d"
    _assert_halted(run, rules, fired_at=WARMUP)
    assert (run / "checkpoints" / f"update_{WARMUP + 1:06d}.pt").is_file()
