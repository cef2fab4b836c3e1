"""A verl ``file`` logger's lines read as the events of one run, as they are written.

:class:`VerlLogReader` is the event-log reader with another decoder: the offsets, the
bounded reads, the torn last line that waits for its newline, the truncation or
replacement of the file (verl truncates it when a job starts again) and the skipped-line
tally are the event log's. Each complete line ``{"step": N, "data": {...}}`` becomes its
events (:mod:`telemetry.integrations.verl` maps the keys); a line that is not JSON, lacks
``step`` or ``data``, or holds a value the contract refuses is a skipped line with its
number, exactly like an event log's. The envelope is synthesised: ``run_id`` from the file
name, ``seq`` 1, 2, 3... over the events (a skipped line is no event, and says so itself;
training steps missing from the file, 9 then 30, leave that many numbers out of ``seq``:
lost updates, which the gate fails as it fails an event log's gap),
``ts`` from the file's mtime and verl's step times (see
:func:`telemetry.integrations.verl.stamps`).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any, Final

import msgspec

from telemetry.eventlog.reader import (
    DECODE_ERRORS,
    DEFAULT_MAX_BYTES,
    EventLogReader,
    SkipClass,
    SkippedLine,
    _reason,
)
from telemetry.events import Event, Heartbeat, PPOUpdate, RunStarted
from telemetry.integrations import verl

VERL_LINE: Final = re.compile(rb'(?:^|\n)[ \t\r]*\{\s*"step"\s*:\s*-?\d+\s*,\s*"data"\s*:\s*\{')
"""A line that begins as a verl file logger's do (orjson writes ``{"step":N,"data":{``);
no event-log line does, so one such line among a file's first tells it is verl's."""


_STEP_SECONDS: Final = re.compile(
    rb'"' + re.escape(verl.STEP_SECONDS.encode()) + rb'"\s*:\s*([-+0-9.eE]{1,32})'
)
"""verl's step time in a line's bytes (the key is only ever in ``data``)."""
_STEP_SECONDS_SPAN: Final = 64
"""Longer than any match of :data:`_STEP_SECONDS`."""


def _number(text: bytes) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


class _Record(msgspec.Struct):
    step: int
    data: dict[str, Any]


class VerlLogReader(EventLogReader):
    """Reads a verl ``file`` logger's lines as events (the interface of
    :class:`~telemetry.eventlog.EventLogReader`).

    ``sniff``: the file's first complete lines decide what it is (the file had none when
    the reader was made): verl's when one of them begins as a verl line, or else an event
    log, decoded as the event-log reader decodes it.
    """

    def __init__(
        self, path: str | os.PathLike[str], offset: int = 0, *, sniff: bool = False
    ) -> None:
        super().__init__(path, offset)
        self._verl: bool | None = None if sniff else True
        self._record_decoder = msgspec.json.Decoder(_Record)
        self.run_id = verl.run_id_of(self.path.name)
        self._seq = 0
        self._started = False
        self._last_ts: float | None = None
        self._last_step: int | None = None
        """The step of the latest training record: a later one past the next step means
        verl's lines for the steps between are not in the file."""

    def _decode(
        self, fd: int, buf: bytearray, size: int, lines: int, unlisted: Counter[SkipClass]
    ) -> tuple[list[Event], list[SkippedLine]]:
        if self._verl is None:
            self._verl = VERL_LINE.search(buf, 0, size) is not None
        if not self._verl:
            return super()._decode(fd, buf, size, lines, unlisted)
        if self.offset == 0:  # the first read, or the file started over
            self._seq, self._started, self._last_ts, self._last_step = 0, False, None, None
        records, skipped = self._records(fd, bytes(buf[:size]), unlisted)
        mtime = os.fstat(fd).st_mtime
        end: float | None = mtime  # these records end the file: the last was written then
        if self.offset + size < self.size:  # more follows: stamp on from the last stamp, or
            first = self._last_ts is None  # on a first read, back from the rest's steps
            end = mtime - self._seconds_from(fd, self.offset + size) if first else None
        seconds = [verl.step_seconds(record.data) for _, record in records]
        stamps = verl.stamps(seconds, end, self._last_ts)
        events: list[Event] = []
        for (line_no, record), ts, took in zip(records, stamps, seconds, strict=True):
            self._last_ts = ts
            self._events(line_no, record, ts, took, events, skipped, unlisted)
        return events, skipped

    def _seconds_from(self, fd: int, start: int) -> float:
        """The step times verl logged on the complete lines from byte ``start`` on: a long
        file's first read stamps its records back from the file's mtime by them. One pass
        in bounded chunks, by a pattern, not a decode."""
        total, pos = 0.0, start
        while chunk := os.pread(fd, DEFAULT_MAX_BYTES, pos):
            cut = chunk.rfind(b"\n")
            if cut < 0:  # no line ends in it: the file's tail, or a line past the chunk
                if len(chunk) < DEFAULT_MAX_BYTES:
                    break
                cut = len(chunk) - _STEP_SECONDS_SPAN  # a key may straddle the chunk's end
            for match in _STEP_SECONDS.finditer(chunk, 0, cut + 1):
                total += verl.step_seconds({verl.STEP_SECONDS: _number(match.group(1))})
            pos += cut + 1
        return total

    def _records(
        self, fd: int, data: bytes, unlisted: Counter[SkipClass]
    ) -> tuple[list[tuple[int, _Record]], list[SkippedLine]]:
        """The lines of ``data`` as records with their numbers, and the lines skipped."""
        records: list[tuple[int, _Record]] = []
        skipped: list[SkippedLine] = []
        line_no = self._lines_before(fd, self.offset)
        for line in data.split(b"\n")[:-1]:  # data ends with a newline
            line_no += 1
            if not line.strip():
                continue
            try:
                records.append((line_no, self._record_decoder.decode(line)))
            except DECODE_ERRORS as exc:
                detail = f"not a verl file logger record: {_reason(exc)}"
                self._list_or_count(SkippedLine(line_no, "malformed", detail), skipped, unlisted)
        return records, skipped

    def _events(
        self,
        line_no: int,
        record: _Record,
        ts: float,
        took: float,
        events: list[Event],
        skipped: list[SkippedLine],
        unlisted: Counter[SkipClass],
    ) -> None:
        """Append the events of one record (none for a validation before the run began)."""
        step, data = record.step, record.data
        training = verl.is_training(data)
        if not self._started:
            if not training:
                return
            self._started = True
            payload = verl.run_started_payload(step, data)
            events.append(
                RunStarted(run_id=self.run_id, seq=self._next(), ts=ts - took, payload=payload)
            )
        if not training:
            hb = verl.heartbeat_payload(step)
            events.append(Heartbeat(run_id=self.run_id, seq=self._next(), ts=ts, payload=hb))
            return
        if self._last_step is not None and step > self._last_step + 1:
            # steps missing from the file (9, then 30): each a lost update, which the log's
            # integrity counts as events missing from seq, as an event log's gap is
            self._seq += step - self._last_step - 1
        self._last_step = max(step, self._last_step if self._last_step is not None else step)
        try:
            update = verl.update_payload(step, data)
        except verl.VerlRecordError as exc:
            detail = f"invalid ppo_update event: verl {exc}"
            skip = SkippedLine(line_no, "malformed", detail, "ppo_update")
            self._list_or_count(skip, skipped, unlisted)
            return
        events.append(PPOUpdate(run_id=self.run_id, seq=self._next(), ts=ts, payload=update))

    def _next(self) -> int:
        self._seq += 1
        return self._seq
