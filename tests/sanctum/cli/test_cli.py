"""The ``sanctum`` command: exit codes (some through the real console script), JSON, JUnit,
run resolution, and one thresholds file that check, summary and the health report follow."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import ClassVar

import pytest

from sanctum.cli import main, with_default_command
from sanctum.health.levels import Level
from sanctum.health.rule_judge import values_needed
from sanctum.health.thresholds import Thresholds
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.model.aggregator import SanctumAggregator
from sanctum.run_files import resolve_run
from telemetry.eventlog import EventLogReader
from tests import processes
from tests.cli_runner import Ran, run_main
from tests.sanctum.logs import RunLog

SANCTUM = Path(sys.executable).with_name("sanctum")


def run_sanctum(*args: str | Path) -> Ran:
    """``sanctum ARGS`` run in this process: its exit code and output."""
    return run_main(main, *args)


def console_script(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``sanctum ARGS`` through the installed console script, as a real process."""
    command = [str(SANCTUM)] if SANCTUM.exists() else [processes.PYTHON, "-m", "sanctum"]
    return processes.run([*command, *args], capture_output=True, text=True, timeout=60)


def test_console_script_exit_codes(
    healthy_log: Path, critical_kl_log: Path, tmp_path: Path
) -> None:
    ok = console_script("check", healthy_log)
    assert (ok.returncode, ok.stdout.splitlines()[-1].split(" ·")[0]) == (0, "OK")
    failed = console_script("check", critical_kl_log)
    assert (failed.returncode, failed.stdout.splitlines()[-1].split(" ")[:2]) == (
        1,
        ["FAIL:", "KL"],
    )
    missing = console_script("check", tmp_path / "nowhere.jsonl")
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        f"sanctum: error: {tmp_path / 'nowhere.jsonl'}: no such event log"
    )
    assert missing.stdout == ""


def test_python_dash_m_refuses_a_newer_schema(newer_schema_log: Path) -> None:
    result = processes.python_m("sanctum", "check", newer_schema_log, timeout=60)
    assert result.returncode == 2
    assert "schema 2 is newer than the supported schema 1" in result.stderr


def test_help_and_the_core_do_not_load_textual_or_torch() -> None:
    code = (
        "import sys\n"
        "import sanctum.reports.check, sanctum.reports.summary, sanctum.reports.scan\n"
        "import sanctum.model.aggregator\n"
        "from sanctum.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
        "print(sorted(m for m in ('textual', 'torch', 'ppo') if m in sys.modules))\n"
    )
    result = processes.run([processes.PYTHON, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    usage = (
        "usage: sanctum [--thresholds FILE] [--fail-on LEVEL] [RUN ... | --all DIR | COMMAND ...]"
    )
    assert usage in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_one_thresholds_file_moves_check_summary_and_health(
    healthy_log: Path, tmp_path: Path
) -> None:
    """KL 0.005 per clip fraction 0.08 (0.0625) is healthy by default; a file that puts
    critical at 0.05 fails it everywhere."""
    toml = tmp_path / "strict.toml"
    toml.write_text("[approx_kl]\nwarning = 0.02\ncritical = 0.05\n", encoding="utf-8")
    assert run_sanctum("check", healthy_log).returncode == 0
    strict = run_sanctum("--thresholds", toml, "check", healthy_log, "--json")
    assert strict.returncode == 1
    kl = json.loads(strict.stdout)["rows"][0]
    rule = load_thresholds(toml).rule("approx_kl")
    assert rule is not None
    judged = 20 - values_needed(rule) + 1  # every update its median judges is past critical
    assert (kl["name"], kl["updates_critical"], kl["rule"]) == (
        "approx_kl",
        judged,
        rule.describe(),
    )
    assert "> 0.02 / > 0.05" in kl["rule"]
    summary = run_sanctum("summary", healthy_log, "--json", "--thresholds", toml)
    assert summary.returncode == 0
    doc = json.loads(summary.stdout)
    assert (doc["verdict_text"], doc["rules"][0]["final_level"]) == (
        f"FAIL: KL {judged}x",
        "critical",
    )
    agg = SanctumAggregator(load_thresholds(toml))
    for batch in EventLogReader(healthy_log / "events.jsonl").batches():
        agg.handle_batch(batch)
    snap = agg.snapshot(0.0)
    assert snap.verdict == "FAIL: KL"
    assert snap.thresholds.rule("approx_kl").critical == 0.05  # type: ignore[union-attr]


def test_bad_thresholds_file_is_exit_2(
    healthy_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text("[approx_kl]\nwarnign = 0.01\n", encoding="utf-8")
    assert main(["check", str(healthy_log), "--thresholds", str(toml)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sanctum: error: {toml}: [approx_kl] warnign: unknown key")


def test_check_json_and_junit(
    critical_kl_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "out" / "junit.xml"
    assert main(["check", str(critical_kl_log), "--json", "--junit", str(junit)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["passed"], doc["exit_code"], doc["fail_on"]) == (False, 1, "critical")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == "1"


def test_unusable_input_still_writes_junit(
    newer_schema_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "junit.xml"
    assert main(["check", str(newer_schema_log), "--junit", str(junit)]) == 2
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("1", "1", "0")
    error = suite.find("testcase/error")
    assert error is not None
    assert "schema 2 is newer than the supported schema 1" in (error.get("message") or "")
    assert "schema 2" in capsys.readouterr().err


@pytest.mark.parametrize("log", ["healthy_log", "critical_kl_log"])
def test_an_unwritable_junit_file_is_exit_2_not_a_verdict(
    log: str, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    junit = blocker / "junit.xml"  # its parent is a file: no JUnit can be written there
    run = request.getfixturevalue(log)
    assert main(["check", str(run), "--junit", str(junit)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith(("OK", "FAIL: KL"))  # the verdict is still printed
    assert err.startswith(f"sanctum: error: cannot write JUnit file {junit}: ")


def test_unusable_input_and_an_unwritable_junit_file_say_both(
    newer_schema_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    junit = blocker / "junit.xml"
    assert main(["check", str(newer_schema_log), "--junit", str(junit)]) == 2
    first, second = capsys.readouterr().err.strip().splitlines()
    assert "schema 2 is newer" in first
    assert second.startswith(f"sanctum: error: cannot write JUnit file {junit}: ")


@pytest.mark.parametrize(
    ("command", "target"),
    [("check", "sanctum.reports.check.scan_log"), ("summary", "sanctum.reports.summary.scan_log")],
)
def test_an_internal_error_exits_2_with_its_traceback_never_1(
    command: str,
    target: str,
    healthy_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken(*args: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(target, broken)
    extra = ["--junit", str(tmp_path / "junit.xml")] if command == "check" else []
    assert main([command, str(healthy_log), *extra]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1] == (
        "sanctum: error: internal error (ZeroDivisionError: float division by zero); "
        "this is a bug in sanctum"
    )
    if command == "check":
        error = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/error")
        assert error is not None and "ZeroDivisionError" in (error.get("message") or "")


def test_check_flags(
    warning_kl_log: Path, unfinished_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(warning_kl_log)]) == 0
    assert main(["check", str(warning_kl_log), "--fail-on", "warning"]) == 1
    assert main(["check", str(unfinished_log)]) == 1
    assert main(["check", str(unfinished_log), "--allow-unfinished"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "with warning so does an anomaly the trainer reported as a warning" in usage


def test_summary_text_and_json(corrupt_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(corrupt_log)]) == 0
    assert "skipped lines (2 malformed, 0 unknown kind)" in capsys.readouterr().out
    assert main(["summary", str(corrupt_log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped_malformed"] == 2


def test_summary_of_nothing_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["summary", str(empty)]) == 2
    assert "no run_started event" in capsys.readouterr().err


def test_default_command_is_watch() -> None:
    assert with_default_command([]) == ["watch"]
    assert with_default_command(["runs/a"]) == ["watch", "runs/a"]
    assert with_default_command(["--thresholds", "t.toml", "runs/a"]) == [
        "--thresholds",
        "t.toml",
        "watch",
        "runs/a",
    ]
    assert with_default_command(["--thresholds", "t.toml"]) == ["--thresholds", "t.toml", "watch"]
    assert with_default_command(["check", "x"]) == ["check", "x"]
    assert with_default_command(["--help"]) == ["--help"]


def test_resolve_run(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "a"
    folder.mkdir(parents=True)
    assert resolve_run(str(folder)) == folder / "events.jsonl"
    assert resolve_run(str(tmp_path / "later.jsonl")) == tmp_path / "later.jsonl"
    assert resolve_run(str(tmp_path / "not-yet")) == tmp_path / "not-yet" / "events.jsonl"


def test_newest_run_under_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for i, name in enumerate(["b-old", "a-new", "c-middle"]):
        events = runs / name / "events.jsonl"
        events.parent.mkdir(parents=True)
        events.write_text("")
        os.utime(events, (1000 + i * (10 if name != "a-new" else 100),) * 2)
    assert resolve_run(None, runs) == runs / "a-new" / "events.jsonl"
    assert resolve_run(str(runs)) == runs / "a-new" / "events.jsonl"


class FakeApp:
    """Stands in for sanctum.tui.app.SanctumApp to see what the CLI hands the dashboard."""

    calls: ClassVar[list[tuple[Path, Thresholds, float | None]]] = []
    refresh: ClassVar[list[float]] = []
    fail_on: ClassVar[list[Level]] = []
    return_code = 0

    def __init__(
        self,
        path: Path,
        thresholds: Thresholds,
        replay_speed: float | None = None,
        refresh_seconds: float | None = None,
        fail_on: Level = Level.CRITICAL,
    ) -> None:
        FakeApp.calls.append((path, thresholds, replay_speed))
        FakeApp.fail_on.append(fail_on)
        if refresh_seconds is not None:
            FakeApp.refresh.append(refresh_seconds)

    def run(self) -> None:
        pass


@pytest.fixture
def fake_app(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, Thresholds, float | None]]:
    module = types.ModuleType("sanctum.tui.app")
    module.SanctumApp = FakeApp  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sanctum.tui.app", module)
    monkeypatch.setenv("TEXTUAL_DRIVER", "fake")  # somewhere to draw: the dashboard opens
    FakeApp.calls = []
    FakeApp.refresh = []
    FakeApp.fail_on = []
    return FakeApp.calls


def test_watch_and_replay_open_the_dashboard(
    fake_app: list[tuple[Path, Thresholds, float | None]],
    healthy_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text("stale_seconds = 30\n", encoding="utf-8")
    assert main(["--thresholds", str(toml), str(healthy_log)]) == 0
    assert main(["replay", str(healthy_log), "--speed", "10", "--refresh", "0.5"]) == 0
    assert FakeApp.refresh == [0.5]  # only when asked: the app's default otherwise
    assert main(["--fail-on", "warning", str(healthy_log)]) == 0  # before RUN, or after it
    assert main(["replay", str(healthy_log), "--fail-on", "warning"]) == 0
    assert FakeApp.fail_on == [Level.CRITICAL, Level.CRITICAL, Level.WARNING, Level.WARNING]
    del fake_app[2:]
    assert main([str(tmp_path / "future-run")]) == 0  # waits for it: no error
    monkeypatch.chdir(healthy_log.parent.parent)
    (healthy_log.parent.parent / "runs").mkdir()
    (healthy_log.parent.parent / "runs" / "x").symlink_to(healthy_log)
    assert main([]) == 0
    events = healthy_log / "events.jsonl"
    assert [(p, t.stale_seconds, s) for p, t, s in fake_app] == [
        (events, 30, None),
        (events, 10.0, 10.0),
        (tmp_path / "future-run" / "events.jsonl", 10.0, None),
        (Path("runs/x/events.jsonl"), 10.0, None),
    ]


def test_interactive_errors(
    fake_app: list[tuple[Path, Thresholds, float | None]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", str(tmp_path / "gone.jsonl")]) == 2
    assert "gone.jsonl: no such event log to replay" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert main([]) == 2
    assert "no run under runs/" in capsys.readouterr().err
    for speed in ("0", "-2", "nan", "fast"):
        with pytest.raises(SystemExit) as info:
            main(["replay", str(tmp_path), "--speed", speed])
        assert info.value.code == 2
    assert fake_app == []


def test_a_dashboard_that_crashed_does_not_exit_0(
    fake_app: list[tuple[Path, Thresholds, float | None]],
    healthy_log: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(FakeApp, "return_code", 1)  # what Textual sets after an exception
    assert main([str(healthy_log)]) == 2
    assert "the dashboard stopped on an internal error" in capsys.readouterr().err


async def test_a_real_crash_sets_the_return_code_the_cli_reads(
    healthy_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sanctum.health.thresholds import DEFAULT_THRESHOLDS
    from sanctum.tui.app import SanctumApp
    from sanctum.tui.widgets import StatusBanner

    def broken(self: StatusBanner, snapshot: object) -> None:
        raise RuntimeError("a bug in a widget")

    monkeypatch.setattr(StatusBanner, "show", broken)
    app = SanctumApp(healthy_log / "events.jsonl", DEFAULT_THRESHOLDS)
    with pytest.raises(RuntimeError, match="a bug in a widget"):  # run_test re-raises it
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
    assert app.return_code == 1


def test_a_misspelt_command_is_an_error_not_a_run_to_wait_for(
    fake_app: list[tuple[Path, Thresholds, float | None]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["sumary", "runs/x"]) == 2
    assert "unknown command 'sumary'; did you mean 'summary'?" in capsys.readouterr().err
    assert main(["chek"]) == 2
    assert main(["./sumary"]) == 0  # a path: waited for, as a run about to start
    assert [path.parent.name for path, _, _ in fake_app] == ["sumary"]


def test_a_file_that_is_not_a_run_log_is_refused_in_the_same_line_by_every_command(
    tmp_path: Path,
) -> None:
    """A README-like file (prose, and one event of a run whose start it lacks): summary,
    check, serve and ``--once`` refuse it alike, in one line naming its first bad line,
    exit 2, with no count of the events or skipped lines it held (no fact about a run)."""
    events = tmp_path / "events.jsonl"
    log = RunLog(events)
    log.update(0)
    log.close()
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\nSome prose.\n" + events.read_text() + "More prose.\n")
    lines = readme.read_text().count("\n")
    expected = (
        f"sanctum: error: {readme}: no run_started event in {lines} lines; "
        "not the event log of a run; line 1: not a JSON event object: JSON is malformed: "
        "invalid character (byte 0)"
    )
    has_serve = importlib.util.find_spec("textual_serve") is not None
    serve = [("serve", readme)] if has_serve else []  # else: the missing extra's one line
    for argv in (("summary", readme), ("check", readme), *serve, (readme, "--once")):
        # serve as a process: should it start serving, its timeout ends the test
        done = console_script(*argv) if argv[0] == "serve" else run_sanctum(*argv)
        assert (done.returncode, done.stderr.strip(), done.stdout) == (2, expected, ""), argv
