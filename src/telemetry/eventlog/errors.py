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
    """The log declares a major schema this reader does not know: a newer one than it
    supports, or one below 1 (never a schema)."""

    def __init__(self, path: Path, line_no: int, found: int) -> None:
        where = f"{visible(str(path))}:{line_no}: event log schema {found}"
        super().__init__(
            f"{where} is newer than the supported schema {SCHEMA_MAJOR}; upgrade sanctum-ppo "
            "to read it"
            if found > SCHEMA_MAJOR
            else f"{where} is not a schema (schemas start at 1; this reader supports "
            f"{SCHEMA_MAJOR})"
        )
        self.found = found
        self.supported = SCHEMA_MAJOR
