"""Strings from a log are shown as text: terminal controls escaped, markup never parsed,
XML and JSON valid, whatever the log holds."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from textual.widgets import Label

from sanctum.cli import main
from sanctum.formatting import dumps, visible
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.reports.check import run_check
from sanctum.reports.check_report import format_text, to_dict, write_junit
from sanctum.reports.once import once_text, read_snapshot
from sanctum.reports.summary import build_summary
from sanctum.reports.summary import format_text as summary_text
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import StatusBanner
from telemetry.codec import PayloadError
from tests.cli_runner import Ran, run_main
from tests.sanctum.app_support import lively, wait_until
from tests.sanctum.logs import RunLog, write_run

HOSTILE = "\x1b]0;owned\x07\x1b[2J[bold red]x[/] KeyError: '[/]' \u202eevil\x00\x85"


def hostile_log(path: Path) -> Path:
    log = RunLog(path, run_id="run-\x1b[31mred")
    log.start(env_id=f"Env{HOSTILE}")
    log.update(lively(0, kl=0.004, early_stopped=True, early_stop_reason=HOSTILE))
    log.anomaly("warning", "grad_norm", 1.0, update=0)
    log.finish("failed", HOSTILE)
    log.close()
    return path


def test_visible_escapes_controls_and_direction_marks_only() -> None:
    assert visible("ok é ✓ [b]x[/b]") == "ok é ✓ [b]x[/b]"
    assert visible("\x1b[2J\x07\x00\x85\u202e\ud800") == r"\x1b[2J\x07\x00\x85\u202e\ud800"


def test_reports_show_log_strings_as_text(tmp_path: Path) -> None:
    path = hostile_log(tmp_path / "e.jsonl")
    result = run_check(path, DEFAULT_THRESHOLDS)
    for text in (format_text(result), summary_text(build_summary(path, DEFAULT_THRESHOLDS))):
        assert "\x1b" not in text and "\u202e" not in text and "\x00" not in text
        assert r"\x1b[2J" in text  # shown, not obeyed
    doc = json.loads(dumps(to_dict(result)))  # valid JSON, and the same strings inside
    assert doc["run_id"] == "run-\x1b[31mred"
    junit = tmp_path / "junit.xml"
    write_junit(result, junit)
    suite = ET.parse(junit).getroot().find("testsuite")  # parses: no raw control characters
    assert suite is not None
    assert any(r"\x1b" in (p.get("value") or "") for p in suite.iter("property"))


async def test_the_dashboard_shows_markup_and_controls_as_text(tmp_path: Path) -> None:
    path = hostile_log(tmp_path / "e.jsonl")
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: 1_700_000_100.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.run.status == "failed", "the failed run")
        run = app.query_one(StatusBanner).query_one("#run", Label)
        shown = str(run.render())
        assert "[bold red]x[/]" in shown and "KeyError: '[/]'" in shown  # as typed, unstyled
        assert "\x1b" not in shown and r"\x1b" in shown
        assert app.return_code is None  # it did not crash


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_check_refuses_a_file_that_is_not_a_regular_file(tmp_path: Path, target: str) -> None:
    import os

    path = Path(target)
    if target == "fifo":
        path = tmp_path / "events.jsonl"
        os.mkfifo(path)
    from sanctum.cli import main

    assert main(["check", str(path)]) == 2


UNIT = "[bold red]x\x1b]0;owned\x07"
"""A step unit of at most 32 characters that is markup and a terminal command."""


def unit_log(path: Path, step_unit: str | None) -> Path:
    return write_run(path, updates=6, step_unit=step_unit)


def sanctum_check(path: Path) -> Ran:
    return run_main(main, "check", path)


def test_a_hostile_step_unit_is_shown_as_text_in_reports(tmp_path: Path) -> None:
    path = unit_log(tmp_path / "e.jsonl", UNIT)
    shown = r"[bold red]x\x1b]0;owned\x07"
    summary = summary_text(build_summary(path, DEFAULT_THRESHOLDS))
    banner = once_text(read_snapshot(path, DEFAULT_THRESHOLDS), path).splitlines()[1]
    for text in (summary, banner):
        assert "\x1b" not in text and "\x07" not in text
    assert f"3,072/10,240 {shown}  4,000 {shown}/s" in banner
    assert f"3072 / 10240 {shown} (30%)" in summary
    doc = json.loads(dumps(build_summary(path, DEFAULT_THRESHOLDS)))
    assert doc["run"]["step_unit"] == UNIT  # the same string to a JSON reader


async def test_the_dashboard_shows_a_hostile_step_unit_as_text(tmp_path: Path) -> None:
    path = unit_log(tmp_path / "e.jsonl", UNIT)
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: 1_700_000_100.0)
    async with app.run_test(size=(160, 36)) as pilot:
        await wait_until(pilot, lambda s: s.run.status == "completed", "the finished run")
        shown = str(app.query_one(StatusBanner).query_one("#steps", Label).render())
        assert r"3,072/10,240 [bold red]x\x1b]0;owned\x07" in shown  # as typed, unstyled
        assert "\x1b" not in shown
        assert app.return_code is None


def test_a_step_unit_too_long_is_refused_by_the_writer_naming_the_field(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "e.jsonl")
    with pytest.raises(PayloadError, match=r"^run_started\.step_unit: .*length <= 32"):
        log.start(step_unit="x" * 10_000)
    log.close()


def test_the_gate_judges_a_hostile_step_unit_as_it_judges_none(tmp_path: Path) -> None:
    plain = sanctum_check(unit_log(tmp_path / "plain.jsonl", None))
    hostile = sanctum_check(unit_log(tmp_path / "hostile.jsonl", UNIT))
    assert (plain.returncode, hostile.returncode) == (0, 0)
    assert hostile.stdout.splitlines()[-1] == plain.stdout.splitlines()[-1]
    assert plain.stdout.splitlines()[-1].startswith("OK")
    assert "\x1b" not in hostile.stdout + hostile.stderr


def test_a_log_whose_step_unit_is_10_kb_is_refused_in_one_line(tmp_path: Path) -> None:
    lines = unit_log(tmp_path / "ok.jsonl", None).read_text(encoding="utf-8").splitlines()
    started = json.loads(lines[0])
    started["payload"]["step_unit"] = "\x1b[2J" + "x" * 10_000
    path = tmp_path / "e.jsonl"
    path.write_text("\n".join([json.dumps(started), *lines[1:]]) + "\n", encoding="utf-8")
    result = sanctum_check(path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "invalid run_started event" in result.stderr and "$.payload.step_unit" in result.stderr
    assert "\x1b" not in result.stderr
