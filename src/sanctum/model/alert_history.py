"""A run's alert history: ``alerts.jsonl`` beside its event log, one :class:`Alert` a line.

The watcher appends each change it sent; ``sanctum alerts`` reads them back. A line that
is not an alert (a torn last line, an edit by hand) is skipped, as the event log's reader
skips what it cannot decode. Lines are written whole, one write each, with every hidden
character escaped (``telemetry.text.json_visible``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import msgspec

from sanctum.model.alerts import Alert
from telemetry.files import MIB, InputFileError, open_input
from telemetry.text import json_visible

ALERTS_FILE: Final = "alerts.jsonl"
"""The history's name, in the run's folder."""
ALERTS_MAX_BYTES: Final = 16 * MIB
"""The most of a history read (its end): some 30,000 alerts."""

_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(Alert)


def history_path(events: Path) -> Path:
    """The alert history of the run whose event log is ``events``."""
    return events.parent / ALERTS_FILE


def append_alerts(events: Path, alerts: Iterable[Alert]) -> None:
    """Append ``alerts`` to the history of the run at ``events`` (OSError when it cannot)."""
    text = "".join(json_visible(_ENCODER.encode(a).decode()) + "\n" for a in alerts)
    if not text:
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(history_path(events), flags, 0o644)  # O_NONBLOCK: a FIFO never waits
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{history_path(events).name} is not a regular file")
        os.set_blocking(fd, True)
        os.write(fd, text.encode("utf-8"))  # one write: whole lines
    finally:
        os.close(fd)


def read_alerts(events: Path) -> list[Alert] | None:
    """The history of the run at ``events``, oldest first (its last
    :data:`ALERTS_MAX_BYTES` when it is longer); None when it has none, or when what is
    there is not a regular file (a FIFO, a device: a run folder is untrusted input)."""
    try:
        with open_input(history_path(events), "alert history") as file:
            size = file.seek(0, 2)
            file.seek(max(0, size - ALERTS_MAX_BYTES))
            data = file.read(ALERTS_MAX_BYTES)
    except InputFileError:
        return None
    lines = data.splitlines()
    if size > ALERTS_MAX_BYTES:
        lines = lines[1:]  # the first was cut by the seek
    alerts = []
    for line in lines:
        try:
            alerts.append(_DECODER.decode(line))
        except msgspec.DecodeError:
            continue
    return alerts
