"""The reader: incremental from a byte offset; a last line without its newline is not an
event yet; truncation or replacement of the file is detected and reported as a ``reset``;
malformed lines (invalid UTF-8 and a payload of another kind among them, see
:class:`~telemetry.codec.LineDecoder`) and unknown kinds are skipped and counted with their
line numbers; only a major schema it does not know (a newer one, or one below 1) is
refused. Reads are bounded per call so memory stays flat however long the log is."""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, Literal

import msgspec

from telemetry.codec import MAX_LINE_BYTES, ForeignFieldError, line_decoder
from telemetry.eventlog.errors import EventLogError, EventLogNotFound, SchemaVersionError
from telemetry.events import KINDS, SCHEMA_MAJOR, Event, RunStarted
from telemetry.files import InputFileError, InputFileMissing, describe, open_input_fd
from telemetry.text import visible

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""How much a single ``read_new`` call reads at most."""
_FINGERPRINT_BYTES = 64
SKIPPED_KEPT = 1000
"""Skipped lines listed for reports, per :data:`SkipClass` (by a reader, and by sanctum's
aggregator); past that they are only counted, never built, so memory stays flat."""
OTHER_TYPE: Final = "(other)"
"""The ``event_type`` of a skip class whose line named a type that is not in the contract
(never a real type: a type is letters, digits and underscores)."""

SkipKind = Literal["malformed", "unknown_kind"]
SkipClass = tuple[SkipKind, str | None]
"""(kind, event type) of a skipped line, the type being a kind of the contract, None when
the line did not say, or :data:`OTHER_TYPE` (every unknown kind is one class): nine classes
today, so a reader lists at most nine times SKIPPED_KEPT lines over its life."""


@dataclass(frozen=True)
class SkippedLine:
    """A line the reader could not use, and why."""

    line_no: int
    kind: SkipKind
    detail: str
    event_type: str | None = None
    """The line's ``type`` when it could be told (None: not even that could be read, or its
    payload carries another kind's own field, so the ``type`` cannot be trusted)."""

    @property
    def skip_class(self) -> SkipClass:
        """The class it is counted in (see :data:`SkipClass`)."""
        kind = self.event_type
        return (self.kind, kind if kind is None or kind in KINDS else OTHER_TYPE)


@dataclass(frozen=True)
class ReadBatch:
    """What one read produced: events in file order, skipped lines, and a reset notice.

    A reader lists the first :data:`SKIPPED_KEPT` skipped lines of each
    :data:`SkipClass` in ``skipped``; later ones are only counted in ``unlisted``, so a
    file of millions of bad lines costs counts, not objects.
    """

    events: list[Event] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    reset: str | None = None
    """Why the reader started again from byte 0 (the file was truncated or replaced)."""
    unlisted: Mapping[SkipClass, int] = field(default_factory=dict)
    """Skipped lines counted but not listed, by class."""
    tail: tuple[int, int] | None = None
    """(line number, bytes) of what follows the file's last newline when this read
    reached the end of the file: a line torn by a crash, or still being written ((0, 0):
    none); None when it did not change since the reader's last batch."""

    @property
    def skipped_count(self) -> int:
        """Every line this batch skipped, listed or not."""
        return len(self.skipped) + sum(self.unlisted.values())

    def __bool__(self) -> bool:
        return bool(
            self.events or self.skipped or self.unlisted or self.reset or self.tail is not None
        )


class _Peek(msgspec.Struct):
    """Just enough of a line to say why it did not decode."""

    type: str | None = None
    payload: dict[str, object] | None = None


DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
"""What decoding one line can raise: malformed JSON or a wrong field (``DecodeError`` and
its ``ValidationError``), invalid UTF-8, and nesting deeper than Python's stack."""
_NO_TYPE: Final[SkipClass] = ("malformed", None)
_TYPE_PREFIX = re.compile(rb'\s*\{\s*"type"\s*:\s*"([A-Za-z0-9_]{1,64})"')
"""The ``type`` of a line that does not decode at all, when it leads the object (every
writer of this contract puts it first)."""


class EventLogReader:
    """Reads events appended to ``path`` from byte ``offset`` on, one bounded batch at a time.

    Never raises on the content of a line: every complete line becomes an event or a
    :class:`SkippedLine` with its number. A line longer than :data:`MAX_LINE_BYTES` is
    skipped without being held in memory. Only a regular file is read (a FIFO or a device
    would block or never end).
    """

    def __init__(self, path: str | os.PathLike[str], offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = offset
        self._counted = (0, 0)  # (byte offset, lines before it): counted lazily, off the fast path
        self.skipped: list[SkippedLine] = []
        """The first SKIPPED_KEPT skipped lines; ``skipped_total`` counts them all."""
        self.skipped_total = 0
        self._listed: Counter[SkipClass] = Counter()
        """Skipped lines listed in batches so far, per class (at most SKIPPED_KEPT each)."""
        self._decoder = line_decoder()  # lax: "NaN" -> nan
        self._identity: tuple[int, int] | None = None
        self._fingerprint = b""
        self._buffer = bytearray()
        self._long_line: tuple[int, int] | None = None
        """(line number, start offset) of a too-long line whose end is still being sought."""
        self.size = 0
        self.snapshot_limit: int | None = None
        """Where ``batches(snapshot=True)`` stops: the file's size when it began (None
        before its first read)."""
        """Size of the file at the last read."""
        self._tail = (0, 0)
        """(line number, bytes) after the file's last newline, as the last read found it."""
        self._told_tail = (0, 0)
        """The tail the last batch reported (none before the first)."""

    @property
    def pending_bytes(self) -> int:
        """Bytes after the last complete line at the last read: a line being written, or
        one a crash left without its newline (a too-long one too, counted from its start)."""
        if self._long_line is not None:
            return max(0, self.size - self._long_line[1])
        return max(0, self.size - self.offset)

    def read_new(self, max_bytes: int = DEFAULT_MAX_BYTES) -> ReadBatch:
        """Decode the complete lines appended since the last call (see :meth:`_read_new`);
        the batch says what follows the last newline when the read reached the end of the
        file and that changed (``tail``)."""
        self._tail = (0, 0)
        batch = self._read_new(max_bytes)
        if batch.reset is not None or self._tail != self._told_tail:
            self._told_tail = self._tail
            batch = replace(batch, tail=self._tail)
        return batch

    def _at_end(self, fd: int) -> None:
        """The read reached the end of the file: what follows the last newline is its tail."""
        pending = self.pending_bytes
        if pending:
            line = (
                self._long_line[0] if self._long_line else self._lines_before(fd, self.offset) + 1
            )
            self._tail = (line, pending)

    def _read_new(self, max_bytes: int) -> ReadBatch:
        """Decode the complete lines appended since the last call (at most ~``max_bytes``).

        An empty batch may still have moved the offset (past blank lines, or part of a
        too-long line): a loop reads on while :attr:`offset` moves, as :meth:`batches` does.

        Raises EventLogNotFound, EventLogError (unreadable, not a regular file) or
        SchemaVersionError; after an error the offset has not moved, so nothing is consumed
        that was not delivered.
        """
        fd = self._open()
        try:
            reset = self._check_identity(fd)
            if self._long_line is not None:
                return self._batch([], *self._skip_long_line(fd), reset=reset)
            want = min(max_bytes, self.size - self.offset)  # never a buffer larger than the news
            if want <= 0:
                return ReadBatch(reset=reset)
            n = self._read_into_buffer(fd, self.offset, want)
            buf = self._buffer
            if n == max_bytes and buf.find(b"\n", 0, n) < 0:  # one enormous line
                whole = self._read_line_whole(fd, bytes(buf[:n]))
                if whole is None:  # past MAX_LINE_BYTES: skip it, never hold it
                    self._long_line = (self._lines_before(fd, self.offset) + 1, self.offset)
                    return self._batch([], *self._skip_long_line(fd), reset=reset)
                buf, n = bytearray(whole), len(whole)
            end = buf.rfind(b"\n", 0, n)
            reached_end = self.offset + n >= self.size
            if end < 0:  # nothing, or a partial last line: not an event yet
                if reached_end:
                    self._at_end(fd)
                return ReadBatch(reset=reset)
            lines = buf.count(b"\n", 0, end + 1)
            unlisted: Counter[SkipClass] = Counter()
            listed = self._listed.copy()
            try:
                events, skipped = self._decode(fd, buf, end + 1, lines, unlisted)
            except SchemaVersionError:
                self._listed = listed  # nothing was delivered: list those lines next time
                raise
            self.offset += end + 1
            if reached_end:
                self._at_end(fd)
        except OSError as exc:
            raise EventLogError(
                f"{describe(self.path)}: cannot read event log: {visible(exc.strerror or str(exc))}"
            ) from exc
        finally:
            os.close(fd)
        return self._batch(events, skipped, unlisted, reset)

    def _open(self) -> int:
        """Open the log for reading through the one opener: a regular file only (a FIFO
        cannot hang us, a device is refused)."""
        try:
            fd, st = open_input_fd(self.path, "event log")
        except InputFileMissing as exc:
            raise EventLogNotFound(str(exc)) from None
        except InputFileError as exc:
            raise EventLogError(str(exc)) from None
        self.size = st.st_size
        return fd

    def _batch(
        self,
        events: list[Event],
        skipped: list[SkippedLine],
        unlisted: Counter[SkipClass],
        reset: str | None,
    ) -> ReadBatch:
        """The batch, with the reader's own tally of skipped lines brought up to date."""
        self.skipped_total += len(skipped) + unlisted.total()
        self.skipped.extend(skipped[: max(0, SKIPPED_KEPT - len(self.skipped))])
        return ReadBatch(events, skipped, reset, dict(unlisted))

    def _list_or_count(
        self, skip: SkippedLine, skipped: list[SkippedLine], unlisted: Counter[SkipClass]
    ) -> None:
        """List ``skip`` while its class has fewer than SKIPPED_KEPT listed, else count it."""
        cls = skip.skip_class
        if self._listed[cls] < SKIPPED_KEPT:
            self._listed[cls] += 1
            skipped.append(skip)
        else:
            unlisted[cls] += 1

    @property
    def line_no(self) -> int:
        """Number of lines consumed so far (EventLogError when the file cannot be read, or
        is no longer a regular file)."""
        size = self.size
        fd = self._open()  # O_NONBLOCK, a regular file only: never a hang on a FIFO
        self.size = size
        try:
            return self._lines_before(fd, self.offset)
        finally:
            os.close(fd)

    def _lines_before(self, fd: int, offset: int) -> int:
        """Count newlines up to ``offset``; only error paths and callers that ask pay for it."""
        counted_at, lines = self._counted
        if offset < counted_at:
            counted_at, lines = 0, 0
        while counted_at < offset:
            block = os.pread(fd, min(offset - counted_at, DEFAULT_MAX_BYTES), counted_at)
            if not block:
                break
            lines += block.count(b"\n")
            counted_at += len(block)
        self._counted = (counted_at, lines)
        return lines

    def batches(
        self, max_bytes: int = DEFAULT_MAX_BYTES, *, snapshot: bool = False
    ) -> Iterator[ReadBatch]:
        """Yield batches until the end of what is in the file now (a stretch of blank
        lines longer than ``max_bytes`` is read past, not taken for the end).

        ``snapshot``: read the file only as far as it was when reading began, so the loop
        ends however fast a writer appends: the size at the first read (taken again when
        the file was replaced) is :attr:`snapshot_limit`, and the line that straddles it is
        read whole. The one loop that reads "until the offset stops moving"."""
        self.snapshot_limit = None
        while not snapshot or self.snapshot_limit is None or self.offset < self.snapshot_limit:
            want = max_bytes
            if snapshot and self.snapshot_limit is not None:
                want = min(want, self.snapshot_limit - self.offset)
            before = self.offset
            batch = self.read_new(want)
            if snapshot and (self.snapshot_limit is None or batch.reset is not None):
                self.snapshot_limit = self.size  # the size now: all this read takes
            if batch:
                yield batch
            elif self.offset == before:  # an empty batch that moved read blank lines
                return

    def follow(
        self, poll_interval: float = 0.1, stop: Callable[[], bool] | None = None
    ) -> Iterator[ReadBatch]:
        """Yield non-empty batches as lines are appended, until ``stop()`` is true.

        Waits for a file that does not exist (yet, or again while it is being replaced).
        """
        while not (stop is not None and stop()):
            try:
                batch = self.read_new()
            except EventLogNotFound:
                batch = ReadBatch()
            if batch:
                yield batch
            else:
                time.sleep(poll_interval)

    def _check_identity(self, fd: int) -> str | None:
        """Detect replacement (new inode or new first bytes) and truncation; restart if so."""
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        reason = None
        if self._identity is not None and identity != self._identity:
            reason = f"{describe(self.path)} was replaced by a new file; reading it from the start"
        elif st.st_size < self.offset:
            reason = (
                f"{describe(self.path)} was truncated to {st.st_size} bytes (had read "
                f"{self.offset}); reading it from the start"
            )
        elif self._fingerprint and not os.pread(fd, _FINGERPRINT_BYTES, 0).startswith(
            self._fingerprint
        ):
            reason = f"{describe(self.path)} was rewritten in place; reading it from the start"
        if reason is not None:
            self.offset = 0
            self._counted = (0, 0)
            self._fingerprint = b""  # fingerprint the new content, not the old file's
            self._long_line = None
        self._identity = identity
        if len(self._fingerprint) < _FINGERPRINT_BYTES:
            self._fingerprint = os.pread(fd, _FINGERPRINT_BYTES, 0)
        return reason

    def _read_into_buffer(self, fd: int, offset: int, size: int) -> int:
        """Read up to ``size`` bytes at ``offset`` into one reused buffer; return the count.

        A fresh 8 MiB bytes object per call, and the slice copy after it, cost page faults
        and copies that together took as long as decoding the events in them.
        """
        if len(self._buffer) < size:
            self._buffer = bytearray(size)
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            f.seek(offset)
            return f.readinto(memoryview(self._buffer)[:size]) or 0

    def _read_line_whole(self, fd: int, data: bytes) -> bytes | None:
        """The line starting at the offset, read on until its newline (or the end of the
        file); None when it is longer than MAX_LINE_BYTES."""
        chunks, size = [data], len(data)
        while chunk := os.pread(fd, DEFAULT_MAX_BYTES, self.offset + size):
            chunks.append(chunk)
            size += len(chunk)
            newline = chunk.find(b"\n")
            length = size - len(chunk) + (newline if newline >= 0 else len(chunk))
            if length > MAX_LINE_BYTES:
                return None
            if newline >= 0:
                break
        return b"".join(chunks)

    def _skip_long_line(self, fd: int) -> tuple[list[SkippedLine], Counter[SkipClass]]:
        """Move past the too-long line in chunks; once its newline is found, it is skipped."""
        assert self._long_line is not None
        line_no, start = self._long_line
        skipped: list[SkippedLine] = []
        unlisted: Counter[SkipClass] = Counter()
        while chunk := os.pread(fd, DEFAULT_MAX_BYTES, self.offset):
            newline = chunk.find(b"\n")
            if newline >= 0:
                self.offset += newline + 1
                self._long_line = None
                length = self.offset - start
                detail = f"line of {length} bytes is longer than the {MAX_LINE_BYTES} byte limit"
                self._list_or_count(SkippedLine(line_no, "malformed", detail), skipped, unlisted)
                break
            self.offset += len(chunk)
        else:
            self._at_end(fd)  # its end is not written yet: the file's tail
        return skipped, unlisted  # nothing while its end is not written yet

    def _decode(
        self, fd: int, buf: bytearray, size: int, lines: int, unlisted: Counter[SkipClass]
    ) -> tuple[list[Event], list[SkippedLine]]:
        """The events of ``buf[:size]`` (``lines`` complete lines from the offset), each line
        decoded on its own terms: the same events and skips whatever its neighbours."""
        chunk = memoryview(buf)[:size]
        if _one_object_per_line(buf, size, lines):
            try:  # fast path: every line is good
                events: list[Event] = self._decoder.decode_lines(chunk)
            except DECODE_ERRORS:
                events = []
            # decode_lines reads JSON values separated by any whitespace; with every line
            # one {...} and as many values as lines, each line held exactly one value
            if len(events) == lines and not _unknown_schema(events):
                return events, []
        return self._decode_each(fd, chunk, self.offset, unlisted)

    def _decode_each(
        self, fd: int, chunk: memoryview, start: int, unlisted: Counter[SkipClass]
    ) -> tuple[list[Event], list[SkippedLine]]:
        """Line by line: a bad line is listed or, past the cap of its class, only counted;
        the lines are cut one at a time, never all held as objects at once."""
        events: list[Event] = []
        skipped: list[SkippedLine] = []
        line_no = self._lines_before(fd, start)
        data = bytes(chunk)
        pos, size = 0, len(data)
        while pos < size:
            newline = data.find(b"\n", pos)  # the chunk ends with a newline
            line = data[pos:newline]
            pos = newline + 1
            line_no += 1
            if not line.strip():
                continue
            if b'"' not in line and self._listed[_NO_TYPE] >= SKIPPED_KEPT:
                unlisted[_NO_TYPE] += 1  # no string, so no "type": never an event
                continue
            try:
                event = self._decoder.decode(line)
            except DECODE_ERRORS as exc:
                self._list_or_count(self._why_skipped(line, line_no, exc), skipped, unlisted)
                continue
            if isinstance(event, RunStarted) and not known_schema(event.payload.schema):
                raise SchemaVersionError(self.path, line_no, event.payload.schema)
            events.append(event)
        return events, skipped

    def _why_skipped(self, line: bytes, line_no: int, exc: Exception) -> SkippedLine:
        try:
            peek = msgspec.json.decode(line, type=_Peek)
        except DECODE_ERRORS:
            leading = _TYPE_PREFIX.match(line)
            kind = leading.group(1).decode() if leading else None
            what = f"invalid {kind} event" if kind in KINDS else "not a JSON event object"
            return SkippedLine(line_no, "malformed", f"{what}: {_reason(exc)}", kind)
        if peek.type is None:
            return SkippedLine(line_no, "malformed", "no 'type' field: not an event")
        if isinstance(exc, ForeignFieldError):  # which kind it is cannot be told
            return SkippedLine(line_no, "malformed", f"not an event of one kind: {exc}")
        if peek.type not in KINDS:
            detail = f"unknown event kind {peek.type!r}"
            return SkippedLine(line_no, "unknown_kind", detail, peek.type)
        schema = (peek.payload or {}).get("schema")
        if (
            peek.type == "run_started"
            and isinstance(schema, int)
            and not isinstance(schema, bool)
            and not known_schema(schema)
        ):
            raise SchemaVersionError(self.path, line_no, schema)
        detail = f"invalid {peek.type} event: {_reason(exc)}"
        return SkippedLine(line_no, "malformed", detail, peek.type)


def known_schema(schema: int) -> bool:
    """Whether this reader reads a log of major ``schema``: 1 up to :data:`SCHEMA_MAJOR`
    (a newer one is for a newer reader; one below 1 was never a schema)."""
    return 1 <= schema <= SCHEMA_MAJOR


def _unknown_schema(events: list[Event]) -> bool:
    """A ``run_started`` among ``events`` declares a major schema this reader does not
    know (cheap when none starts a run, as in all but one batch of a log)."""
    return RunStarted in set(map(type, events)) and any(
        isinstance(event, RunStarted) and not known_schema(event.payload.schema) for event in events
    )


def _one_object_per_line(buf: bytearray, size: int, lines: int) -> bool:
    """Every one of the ``lines`` lines of ``buf[:size]`` is ``{...}`` with nothing around
    it, so no JSON value runs from one line into the next (a string cannot hold a raw
    newline, and a ``}`` ending a line then a ``{`` starting the next cannot sit inside one
    value): with as many values as lines, each line is one value. Two C-level scans."""
    return (
        buf.startswith(b"{")
        and buf.endswith(b"}\n", 0, size)
        and buf.count(b"}\n{", 0, size) == lines - 1
    )


def _reason(exc: Exception) -> str:
    """Why a line did not decode, in a few words."""
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def read_events(path: str | os.PathLike[str]) -> ReadBatch:
    """Read a whole event log into one batch (for modest logs; stream with ``batches``)."""
    events: list[Event] = []
    skipped: list[SkippedLine] = []
    unlisted: Counter[SkipClass] = Counter()
    for batch in EventLogReader(path).batches():
        events.extend(batch.events)
        skipped.extend(batch.skipped)
        unlisted.update(batch.unlisted)
    return ReadBatch(events, skipped, unlisted=dict(unlisted))
