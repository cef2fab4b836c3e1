"""``--on-critical``'s command: run once per run, its output bounded, never left running."""

from __future__ import annotations

import sys
import time

import msgspec

from sanctum.live.on_critical import SAID_LINES, OnCritical
from sanctum.model.alerts import Alert
from tests.sanctum.logs import an_alert

FLOOD = "import time\nfor i in range(500): print(i, flush=True)\ntime.sleep(60)"


def _alert(run: str = "run\x1b[2J") -> Alert:
    return an_alert(run=run)


def test_a_flooding_command_that_hangs_is_bounded_and_killed_at_close() -> None:
    said: list[str] = []
    command = OnCritical([sys.executable, "-c", FLOOD], said.append)
    command.alert(_alert())
    command.alert(msgspec.structs.replace(_alert(), update=9))  # the same run: once
    deadline = time.monotonic() + 30
    while sum("on-critical" in line for line in said) < SAID_LINES and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    command.close(0.5)
    assert time.monotonic() - started < 10  # waited its bound, then killed the group
    ended = time.monotonic() + 10
    while not any("killed by signal" in line for line in said) and time.monotonic() < ended:
        time.sleep(0.05)
    output = [line for line in said if line.startswith("sanctum: on-critical run\\x1b[2J: ")]
    assert len([x for x in output if x.split(": ")[-1].isdigit()]) == SAID_LINES
    assert any("more lines not shown" in line for line in said)
    assert any("killed by signal 9" in line for line in said)
    assert "\x1b" not in "".join(said)  # the run id from the log, escaped
