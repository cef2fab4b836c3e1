"""``ppo train`` picks the dashboard or headless mode, and the child gets the same settings.

What the terminal gets after a finished run under the dashboard is tested here; the
attached mode on real training (Pilot, stop, detach, TRAINER DOWN) in
tests/integration/test_attached.py.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pytest

from ppo.cli import EXIT_USAGE, build_parser, main
from ppo.cli.attach import (
    FORWARDED,
    NOT_FORWARDED,
    STDERR_FILE,
    STDOUT_FILE,
    child_command,
    report,
    wants_dashboard,
)
from ppo.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_STOPPED
from ppo.run.halt import EXIT_HALTED
from sanctum import ProcessOutcome, TrainerExit, check_verdict
from telemetry.recorder import EVENTS_FILE
from telemetry.returns import FINAL_RETURN
from tests import processes
from tests.sanctum.logs import kl_breach, write_run


class Terminal(io.StringIO):
    """An output stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["train", *argv])


@pytest.mark.parametrize(
    ("argv", "terminal", "dashboard"),
    [
        ((), True, True),
        ((), False, False),
        (("--headless",), True, False),
        (("--tui",), False, True),
        (("--tui",), True, True),
    ],
)
def test_dashboard_on_a_terminal_or_with_tui_headless_otherwise(
    argv: tuple[str, ...], terminal: bool, dashboard: bool
) -> None:
    out = Terminal() if terminal else io.StringIO()
    assert wants_dashboard(parse(*argv), out) is dashboard


def test_every_train_option_is_forwarded_or_set_by_the_launcher() -> None:
    assert set(vars(parse())) == set(FORWARDED) | NOT_FORWARDED


def test_the_child_gets_the_same_settings_headless_with_a_fixed_run() -> None:
    argv = (
        "--tui",
        "--env",
        "Acrobot-v1",
        "--total-steps",
        "5000",
        "--seed",
        "7",
        "--config",
        "my.toml",
        "--set",
        "max_kl=0.03",
        "--set",
        "num_envs=2",
        "--run-dir",
        "elsewhere",
    )
    args = parse(*argv)
    command = child_command(args, "fixed-id")
    assert command[:5] == [sys.executable, "-m", "ppo", "train", "--headless"]
    child = build_parser().parse_args(command[3:])
    assert (child.headless, child.tui, child.run_id) == (True, False, "fixed-id")
    same = {k: v for k, v in vars(child).items() if k not in ("headless", "tui", "run_id")}
    assert same == {k: v for k, v in vars(args).items() if k not in ("headless", "tui", "run_id")}


def test_an_unknown_option_is_refused_rather_than_dropped() -> None:
    args = parse()
    args.new_flag = 1
    with pytest.raises(RuntimeError, match=r"does not forward \['new_flag'\]"):
        child_command(args, "r")


def test_bad_settings_fail_before_any_dashboard_or_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["train", "--tui", "--run-dir", str(tmp_path), "--set", "max_kl=-1"])
    assert code == EXIT_USAGE
    assert "max_kl must be finite and > 0" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no run folder, so no child was started


def test_an_existing_event_log_is_not_appended_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "events.jsonl").write_text("")
    code = main(["train", "--tui", "--run-dir", str(tmp_path), "--run-id", "taken"])
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{tmp_path / 'taken'} already has an event log; pick another --run-id" in err
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["events.jsonl"]


def test_the_cli_loads_neither_sanctum_nor_textual_until_the_dashboard_starts() -> None:
    code = "import json, sys, ppo.cli; print(json.dumps(sorted(sys.modules)))"
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    roots = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert {"sanctum", "textual"}.isdisjoint(roots)


def _reported(watched: ProcessOutcome, run_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = report(watched, run_path, out, err)
    return code, out.getvalue(), err.getvalue()


def _ended(code: int, *, requested: bool = False) -> TrainerExit:
    return TrainerExit(code, ("last words",), requested)


def test_what_became_of_training_is_read_from_the_outcome_alone(tmp_path: Path) -> None:
    """Each way a dashboard closes, said from sanctum's record of the process (never from
    the dashboard's own attributes): detached, closed while training, stopped, halted,
    died, finished."""
    run = tmp_path / "r"
    code, out, _ = _reported(ProcessOutcome(7, None, detached=True, reason=None), run)
    assert code == EXIT_OK and out.startswith("detached; training continues in the background")
    assert "(pid 7)" in out and "kill -INT 7" in out
    code, out, _ = _reported(ProcessOutcome(7, None, detached=False, reason=None), run)
    assert code == EXIT_STOPPED and out.startswith("the dashboard closed; training continues")
    stopped = ProcessOutcome(7, _ended(130, requested=True), detached=False, reason=None)
    code, _, err = _reported(stopped, run)
    assert code == EXIT_INTERRUPTED
    assert err == "stopped the trainer (exit code 130)\n  last words\n"
    halted = ProcessOutcome(7, _ended(EXIT_HALTED), detached=False, reason="halted: RefKL x")
    write_run(run / EVENTS_FILE, updates=12, overrides=kl_breach(5), finish="failed")
    code, _, err = _reported(halted, run)
    assert code == EXIT_HALTED
    verdict = check_verdict(run / EVENTS_FILE)
    assert verdict.startswith("FAIL: KL 3x")  # the halted run's own verdict, as headless
    assert err == (
        f"ppo train: halted: RefKL x\n  see why:  sanctum check {run}\n"
        f"verdict: {verdict}  (sanctum check {run})\n"
    )
    died = ProcessOutcome(7, _ended(EXIT_HALTED), detached=False, reason="RuntimeError: x")
    code, _, err = _reported(died, run)
    assert code == 1 and err.startswith("ppo train: the trainer process died (exit code 1)")
    code, out, _ = _reported(ProcessOutcome(7, _ended(0), detached=False, reason=None), run)
    assert code == EXIT_OK
    assert out.splitlines() == [
        f"done; event log: {run}/events.jsonl",
        f"  check it:  sanctum check {run}",
        f"  replay it: sanctum replay {run}",
    ]


@pytest.mark.slow
async def test_after_the_dashboard_closes_the_terminal_gets_the_trainers_closing_lines(
    tmp_path: Path,
) -> None:
    """A run that finished under the dashboard, then ``q``: the terminal gets the done line
    with the final return and where the log and checkpoint are, as headless prints them,
    not only the event log's path (the trainer printed them into trainer.out)."""
    from sanctum import check_verdict
    from sanctum.model.snapshot import Connection
    from sanctum.tui.attached import AttachedProcess
    from tests.waiting import settle

    small = ["--set", "num_envs=2", "--set", "num_steps=32", "--set", "hidden_sizes=16"]
    args = parse("--tui", "--run-dir", str(tmp_path), "--total-steps", "64", *small)
    run_path = tmp_path / "run"
    run = AttachedProcess.start(
        child_command(args, "run"),
        run_path / EVENTS_FILE,
        stdout_path=run_path / STDOUT_FILE,
        stderr_path=run_path / STDERR_FILE,
    )
    try:
        async with run.app.run_test(size=(120, 36)) as pilot:
            await settle(
                pilot,
                lambda app: (
                    app.snapshot is not None and app.snapshot.connection is Connection.FINISHED
                ),
                "FINISHED",
                120.0,
            )
            await pilot.press("q")
            await settle(pilot, lambda app: app.return_code is not None, "exit", 120.0, shown=False)
        run.process.process.wait(120.0)
        out, err = io.StringIO(), io.StringIO()
        assert report(run.outcome(), run_path, out, err) == 0, err.getvalue()
    finally:
        if run.process.poll() is None:
            run.process.process.kill()
        run.process.process.wait(120.0)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("done: 64 steps, 1 update in "), lines
    assert f"{FINAL_RETURN} " in lines[0]
    assert lines[1:] == [
        f"event log: {run_path}/events.jsonl",
        f"checkpoint: {run_path}/checkpoints/update_000001.pt",
        f"verdict: {check_verdict(run_path / EVENTS_FILE)}  (sanctum check {run_path})",
        f"  check it:  sanctum check {run_path}",
        f"  replay it: sanctum replay {run_path}",
    ]
