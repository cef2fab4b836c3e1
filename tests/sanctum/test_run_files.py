"""Which events file a command means, when the path cannot be looked at: a folder this user
may not search, or a name too long for the file system, is one line and exit 2 for every
command that reads a run, never a traceback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sanctum.cli import main
from sanctum.run_files import UsageError, resolve_run
from telemetry.testing import LogBuilder
from tests.cli_runner import run_main

NOBODY = 65534
"""The unprivileged user a root test process drops to (root may search any folder)."""


DUMMY = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "base-s1"
"""A readable run: the warm-up of :func:`_as_reader`."""


@pytest.fixture
def hidden_run(tmp_path: Path) -> Iterator[Path]:
    """A finished run inside a folder of mode 700 that this test's reader may not search."""
    secret = tmp_path / "secret"
    log = LogBuilder(secret / "run" / "events.jsonl")
    log.start()
    log.finish()
    log.close()
    secret.chmod(0o700 if os.geteuid() == 0 else 0o000)
    yield secret / "run"
    secret.chmod(0o700)


def _as_reader(*argv: str | Path) -> tuple[int, str, str]:
    """``sanctum ARGV`` as a user who may not search the folder. Root may search anything,
    so a root test runs it as the unprivileged user (effective uid), once the same command
    has loaded what it imports (the interpreter's own files may be closed to that user)."""
    if os.geteuid() != 0:
        ran = run_main(main, *argv)
        return ran.returncode, ran.stdout, ran.stderr
    run_main(main, *[DUMMY if isinstance(a, Path) else a for a in argv])
    os.seteuid(NOBODY)
    try:
        ran = run_main(main, *argv)
    finally:
        os.seteuid(0)
    return ran.returncode, ran.stdout, ran.stderr


@pytest.mark.parametrize(
    "command", [["check"], ["summary"], ["--once"], ["diff"]], ids=lambda c: c[0]
)
def test_a_run_in_a_folder_the_user_may_not_search_is_one_line(
    hidden_run: Path, command: list[str]
) -> None:
    runs = [hidden_run, hidden_run] if command == ["diff"] else [hidden_run]
    argv = [*runs, "--once"] if command == ["--once"] else [*command, *runs]
    code, out, err = _as_reader(*argv)
    assert (code, out) == (2, ""), err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("sanctum: error: ") and "permission denied" in err


def test_a_name_too_long_for_the_file_system_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot look there"):
        resolve_run("r" * 5000)
