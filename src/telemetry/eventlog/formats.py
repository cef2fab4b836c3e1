"""Which reader a log needs: the one place a log file's format is told.

:func:`open_reader` looks at the first bytes of the file: a line there that begins as a
verl ``file`` logger's line (``{"step": N, "data": {...}}``) gets a
:class:`~telemetry.eventlog.verl.VerlLogReader`, anything else the event-log reader (which
reports what is wrong with it, a missing file, a FIFO or a device included, exactly as
before). A file that is not there yet or has no complete line (a run about to start) gets a
reader that lets its first complete lines decide.
"""

from __future__ import annotations

import os
from typing import Final

from telemetry.eventlog.reader import EventLogReader
from telemetry.eventlog.verl import VERL_LINE, VerlLogReader
from telemetry.files import InputFileError, InputFileMissing, open_input_fd

SNIFF_BYTES: Final = 4096
"""How much of a file's head is looked at (a verl line says what it is in its first bytes)."""


def open_reader(path: str | os.PathLike[str], offset: int = 0) -> EventLogReader:
    """The reader for the log at ``path``: verl's file logger, or the event log."""
    try:
        fd, _ = open_input_fd(path, "event log")
    except InputFileMissing:  # not there yet: its first line will tell
        return VerlLogReader(path, offset, sniff=True)
    except InputFileError:
        return EventLogReader(path, offset)  # it says what is wrong, on its first read
    try:
        head = os.pread(fd, SNIFF_BYTES, 0)
    except OSError:
        return EventLogReader(path, offset)
    finally:
        os.close(fd)
    if VERL_LINE.search(head):
        return VerlLogReader(path, offset)
    if b"\n" in head.lstrip() or len(head) == SNIFF_BYTES:
        return EventLogReader(path, offset)
    return VerlLogReader(path, offset, sniff=True)  # no complete line yet
