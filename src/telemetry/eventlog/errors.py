"""What can go wrong with an event log as a whole (a bad line is never an error: it is
skipped and counted by the reader)."""

from __future__ import annotations

from pathlib import Path

from telemetry.events import SCHEMA_MAJOR
from telemetry.text import visible


class EventLogError(Exception):
    """The event log cannot be used (missing, unreadable, newer schema)."""


class EventLogNotFound(EventLogError, FileNotFoundError):
    """There is no event log at the path."""


class LogInUse(EventLogError, FileExistsError):
    """Another writer holds the log, or it already holds a run that must not be mixed in."""


class SchemaVersionError(EventLogError):
    """The log was written with a newer major schema than this reader supports."""

    def __init__(self, path: Path, line_no: int, found: int) -> None:
        super().__init__(
            f"{visible(str(path))}:{line_no}: event log schema {found} is newer than the supported "
            f"schema {SCHEMA_MAJOR}; upgrade sanctum-ppo to read it"
        )
        self.found = found
        self.supported = SCHEMA_MAJOR
