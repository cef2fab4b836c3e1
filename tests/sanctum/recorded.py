"""The recorded trainer runs of tests/fixtures/recorded (its README says how each was
made), and ``sanctum`` run in process with its output captured, or ``sanctum check`` in a
process of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from tests.cli_runner import run_main

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def recorded(name: str) -> str:
    """The folder of the recorded run ``name`` (e.g. ``base-s1``)."""
    return str(RECORDED / name)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``sanctum ARGV``: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def check_report(path: Path, *options: str) -> dict[str, Any]:
    """``sanctum check PATH --json OPTIONS``: its JSON report, whose ``exit_code`` is the
    command's."""
    done = run_main(main, "check", path, "--json", *options)
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["exit_code"] == done.returncode, done.stderr
    return report
