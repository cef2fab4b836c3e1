"""The reader never raises on what a line holds: every complete line is an event or a
counted skip with its number, memory stays bounded, and only regular files are read."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from telemetry.eventlog import (
    MAX_LINE_BYTES,
    EventLogError,
    EventLogNotFound,
    EventLogReader,
    read_events,
)
from telemetry.events import Heartbeat
from telemetry.testing import LogBuilder
from tests import processes
from tests.telemetry.logfiles import steps_of

UPDATE = b'{"type":"ppo_update","run_id":"run-a","seq":%d,"ts":1.0,"payload":{%s}}\n'
DEEP = b"[" * 100_000 + b"]" * 100_000
FIELDS = b'"update":0,"global_step":8,"approx_kl":%s,"clip_fraction":0.1,"early_stopped":false'


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


@pytest.mark.parametrize(
    ("line", "event_type", "why"),
    [
        (UPDATE % (2, FIELDS % b"NaN"), "ppo_update", "invalid ppo_update event"),  # json.dumps
        (UPDATE % (2, FIELDS % b"1e400"), "ppo_update", "invalid ppo_update event"),
        (UPDATE % (2, FIELDS % b'"abc"'), "ppo_update", "invalid ppo_update event"),
        (
            b'{"type":"ppo_update","run_id":"r","seq":2,"ts":1,"payload":{"early_stop_reason":"\xff\xfe"}}\n',
            "ppo_update",
            "not valid UTF-8",
        ),
        (
            b'{"type":"heartbeat","payload":{"x":' + DEEP + b',"global_step":1}}\n',
            "heartbeat",
            "nested too deeply",
        ),
        (b'{"x":' + DEEP + b"}\n", None, "nested too deeply"),
        (b"\xff\xfe garbage\n", None, "not a JSON event object"),
    ],
    ids=["nan-token", "1e400", "string", "invalid-utf8", "deep-event", "deep-object", "bytes"],
)
def test_a_bad_line_is_a_skip_with_its_number_and_type(
    log: LogBuilder, line: bytes, event_type: str | None, why: str
) -> None:
    append(log.path, line)
    log.beats(8)
    batch = read_events(log.path)
    assert [type(e) for e in batch.events][-1] is Heartbeat  # the line after it still reads
    (skip,) = batch.skipped
    assert (skip.line_no, skip.kind, skip.event_type) == (2, "malformed", event_type)
    assert why in skip.detail


def test_a_line_past_the_limit_is_skipped_in_bounded_memory(log: LogBuilder) -> None:
    log.beats(1)
    with log.path.open("ab") as fh:  # a 40 MiB line, written in pieces as a runaway writer
        chunk = b"x" * (4 * 1024 * 1024)
        for _ in range(10):
            fh.write(chunk)
        fh.write(b"\n")
    log.beats(2)
    batch = read_events(log.path)
    assert steps_of(batch.events[1:]) == [1, 2]
    (skip,) = batch.skipped
    assert skip.line_no == 3 and "longer than the 16777216 byte limit" in skip.detail
    # The peak memory of the read, in a fresh process: in this one, whatever earlier tests
    # loaded (torch, its allocator's arenas) moves the peak, not the reader.
    code = (
        "import resource, sys\nfrom telemetry.eventlog import read_events\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "read_events(sys.argv[1])\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)\n"
    )
    done = processes.run(
        [sys.executable, "-c", code, str(log.path)], capture_output=True, text=True, check=True
    )
    assert float(done.stdout) < 40  # never the whole line: at most a limit's worth of buffers


def test_a_long_line_still_being_written_is_skipped_once_it_ends(log: LogBuilder) -> None:
    reader = EventLogReader(log.path)
    assert len(reader.read_new().events) == 1
    append(log.path, b"y" * (MAX_LINE_BYTES + 10))
    assert not reader.read_new().skipped  # its end is not there yet
    append(log.path, b"y" * 1000 + b"\n")
    log.beats(5)
    batch = reader.read_new()
    assert [s.line_no for s in batch.skipped] == [2]
    assert steps_of(reader.read_new().events) == [5]


def test_a_line_just_under_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    pad = b" " * (MAX_LINE_BYTES - 200)
    line = (
        b'{"type":"heartbeat","run_id":"r","seq":1,"ts":1.0,'
        + pad
        + b'"payload":{"global_step":3}}\n'
    )
    path.write_bytes(line)
    assert steps_of(read_events(path).events) == [3]


def test_a_fifo_is_refused_at_once_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            EventLogReader(fifo).read_new()
        except EventLogError as exc:
            outcome.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5.0), "opening a FIFO blocked"
    assert str(outcome[0]).endswith("cannot read event log: it is a pipe (FIFO)")


def test_a_device_is_refused() -> None:
    with pytest.raises(EventLogError, match="/dev/zero: cannot read event log: it is a device"):
        EventLogReader("/dev/zero").read_new()


def test_pending_bytes_report_a_torn_last_line(log: LogBuilder) -> None:
    reader = EventLogReader(log.path)
    list(reader.batches())
    assert reader.pending_bytes == 0
    torn = b'{"type":"heartbeat","run_id":"run-a","seq":2,"ts":1.0,"pay'
    append(log.path, torn)
    list(reader.batches())
    assert reader.pending_bytes == len(torn)


def test_a_batch_says_the_tail_once_when_it_changes_a_too_long_one_too(log: LogBuilder) -> None:
    """The bytes after the last newline, when a read reaches the end of the file: in a
    batch of their own when nothing else changed, and only when they changed."""
    reader = EventLogReader(log.path)
    assert [b.tail for b in reader.batches()] == [None]  # no tail: nothing to say
    lines = log.path.read_bytes().count(b"\n")
    torn = b'{"type":"heartbeat","run_id":"run-a","seq":2,"ts":1.0,"pay'
    append(log.path, torn)
    assert [b.tail for b in reader.batches()] == [(lines + 1, len(torn))]
    assert list(reader.batches()) == []  # the same tail: no news
    append(log.path, b'load":{"global_step":1}}\n')
    (batch,) = reader.batches()
    assert (len(batch.events), batch.tail) == (1, (0, 0))  # whole now: the tail is gone
    with log.path.open("r+b") as fh:  # NUL bytes past the line limit, never held whole
        fh.truncate(log.path.stat().st_size + MAX_LINE_BYTES + 10)
    assert [b.tail for b in reader.batches()] == [(lines + 2, MAX_LINE_BYTES + 10)]
    assert reader.pending_bytes == MAX_LINE_BYTES + 10


def test_an_object_spread_over_two_lines_is_two_bad_lines_not_one_event(log: LogBuilder) -> None:
    """JSON allows a newline inside an object; the log allows one event per line. Found by
    the fuzz test: the fast path once read both lines as one event."""
    whole = read_events(log.path)
    append(
        log.path,
        b'{\n"type":"heartbeat","run_id":"run-a","seq":2,"ts":1.0,"payload":{"global_step":1}}\n',
    )
    batch = read_events(log.path)
    assert len(batch.events) == len(whole.events)
    assert [s.line_no for s in batch.skipped] == [2, 3]


def test_messages_name_a_hostile_log_escaped(tmp_path: Path) -> None:
    """The reader's own messages show the file name escaped, for any caller that prints them."""
    hostile = tmp_path / "\x1b]0;pwned\x07"
    hostile.mkdir()
    with pytest.raises(EventLogError) as info:
        EventLogReader(hostile).read_new()
    assert "\x1b" not in str(info.value) and "\\x1b]0;pwned\\x07" in str(info.value)
    with pytest.raises(EventLogNotFound) as missing:
        EventLogReader(tmp_path / "\u202egone").read_new()
    assert "\\u202egone: no such event log" in str(missing.value)
