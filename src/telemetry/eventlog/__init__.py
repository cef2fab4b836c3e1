"""The append-only event log: one JSON line per event, written whole and flushed on emit.

:mod:`~telemetry.eventlog.writer` appends (one writer per file, never a torn line);
:mod:`~telemetry.eventlog.reader` follows (incremental, bounded, never raising on a line's
content); :mod:`~telemetry.eventlog.errors` names what makes a log unusable as a whole.
"""

from telemetry.codec import MAX_LINE_BYTES
from telemetry.eventlog.errors import (
    EventLogError,
    EventLogNotFound,
    LogInUse,
    SchemaVersionError,
)
from telemetry.eventlog.reader import (
    DEFAULT_MAX_BYTES,
    OTHER_TYPE,
    SKIPPED_KEPT,
    EventLogReader,
    ReadBatch,
    SkipClass,
    SkipKind,
    SkippedLine,
    read_events,
)
from telemetry.eventlog.writer import EventLogWriter

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_LINE_BYTES",
    "OTHER_TYPE",
    "SKIPPED_KEPT",
    "EventLogError",
    "EventLogNotFound",
    "EventLogReader",
    "EventLogWriter",
    "LogInUse",
    "ReadBatch",
    "SchemaVersionError",
    "SkipClass",
    "SkipKind",
    "SkippedLine",
    "read_events",
]
