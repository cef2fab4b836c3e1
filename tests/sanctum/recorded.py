"""The recorded trainer runs of tests/fixtures/recorded (its README says how each was
made), and ``sanctum`` run in process with its output captured."""

from __future__ import annotations

from pathlib import Path

import pytest

from sanctum.cli import main

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def recorded(name: str) -> str:
    """The folder of the recorded run ``name`` (e.g. ``base-s1``)."""
    return str(RECORDED / name)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``sanctum ARGV``: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
