"""Memory stays bounded whatever a log holds: measured as the peak RSS growth of a real
``sanctum`` command in a fresh interpreter, against the same command on a tiny log (so
the bound travels across machines: it is about the input, not the interpreter).

- A log of one-character bad lines: each skipped line past the reader's cap is counted,
  never built (it used to be an object each, about 290 bytes a line: 1.2 GB for 8 MB).
- A log of two runs holding a line far past MAX_LINE_BYTES: the second pass that names
  the lines where runs start reads lines bounded by the limit, as the reader does (it used
  to read the line whole: 2.2 GB for a 1 GiB line).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from telemetry.eventlog import MAX_LINE_BYTES
from telemetry.files import MIB
from telemetry.testing import LogBuilder
from tests import processes

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc (Linux)"
)

_PEAK = """
import sys
from sanctum.cli import main

def high_water():  # this process's own peak (ru_maxrss would include a big parent's)
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))

base = high_water()
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(f"{code} {high_water() - base}")
"""


def peak_growth(*argv: str) -> tuple[int, int]:
    """(exit code, peak RSS growth in bytes) of ``sanctum ARGV`` in a fresh interpreter."""
    done = processes.run(
        [sys.executable, "-c", _PEAK, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "120"},
        check=False,
    )
    code, grown_kb = done.stdout.split()[-2:]
    return int(code), int(grown_kb) * 1024


def small_log(path: Path, run_id: str = "run-a") -> LogBuilder:
    log = LogBuilder(path, run_id=run_id)
    log.start()
    log.beats(1, 2)
    return log


@pytest.mark.parametrize("command", [["check"], ["summary"], ["--once"]])
def test_a_flood_of_bad_lines_is_counted_in_bounded_memory(
    tmp_path: Path, command: list[str]
) -> None:
    control = tmp_path / "control.jsonl"
    small_log(control).close()
    flood = tmp_path / "flood.jsonl"
    log = small_log(flood)
    log.raw(b"x\n" * 500_000)  # 1 MB: half a million skipped lines
    log.close()
    _, baseline = peak_growth(*command, str(control))
    code, grown = peak_growth(*command, str(flood))
    assert code in (0, 1)  # judged (check fails it: unreadable lines)
    assert grown - baseline < 32 * MIB  # was ~145 MB: an object per skipped line


def test_a_huge_line_in_a_log_of_two_runs_is_never_held_whole(tmp_path: Path) -> None:
    control = tmp_path / "control.jsonl"
    small_log(control).close()
    two = tmp_path / "two.jsonl"
    log = small_log(two, "run-a")
    log.raw(b'{"type":"run_started",' + b"x" * (6 * MAX_LINE_BYTES) + b"\n")
    log.recorder.run_id = log.recorder.emitter.run_id = "run-b"
    log.start()
    log.beats(3)
    log.close()
    _, baseline = peak_growth("check", str(control))
    code, grown = peak_growth("check", str(two))
    assert code == 2  # two runs: check names the line where the second starts
    assert grown - baseline < 4 * MAX_LINE_BYTES  # was twice the line: 190 MiB here
