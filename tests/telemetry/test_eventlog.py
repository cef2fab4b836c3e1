"""Reader contract: offsets, partial lines, bad lines, schema versions, truncation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telemetry.eventlog import (
    EventLogError,
    EventLogNotFound,
    EventLogReader,
    SchemaVersionError,
    read_events,
)
from telemetry.events import Heartbeat, RunStarted
from telemetry.testing import LogBuilder
from tests.telemetry.logfiles import steps_of


@pytest.fixture
def log(tmp_path: Path) -> LogBuilder:
    builder = LogBuilder(tmp_path / "events.jsonl", run_id="run-a")
    yield builder
    builder.close()


def test_empty_file_reads_as_no_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.touch()
    reader = EventLogReader(path)
    batch = reader.read_new()
    assert not batch
    assert batch.events == [] and batch.skipped == [] and reader.offset == 0


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "events.jsonl"
    with pytest.raises(EventLogNotFound, match=r"nope/events\.jsonl: no such event log"):
        EventLogReader(path).read_new()
    with pytest.raises(EventLogNotFound):
        read_events(path)


def test_unreadable_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="cannot read event log"):
        EventLogReader(tmp_path).read_new()  # a directory


def test_writes_between_reads_are_picked_up_in_order(log: LogBuilder) -> None:
    reader = EventLogReader(log.path)
    log.start()
    log.beats(1, 2)
    first = reader.read_new()
    assert [type(e) for e in first.events] == [RunStarted, Heartbeat, Heartbeat]
    assert not reader.read_new()
    log.beats(3)
    assert steps_of(reader.read_new().events) == [3]
    assert reader.offset == log.path.stat().st_size


def test_partial_last_line_is_not_an_event_until_completed(log: LogBuilder) -> None:
    log.beats(1)
    line = b'{"type":"heartbeat","run_id":"run-a","seq":2,"ts":2.0,"payload":{"global_step":2}}\n'
    with log.path.open("ab") as f:
        f.write(line[:30])
    reader = EventLogReader(log.path)
    assert steps_of(reader.read_new().events) == [1]
    offset = reader.offset
    assert not reader.read_new() and reader.offset == offset
    with log.path.open("ab") as f:
        f.write(line[30:])
    assert steps_of(reader.read_new().events) == [2]


def test_corrupt_line_in_the_middle_is_skipped_and_counted(log: LogBuilder) -> None:
    log.start()
    log.beats(1)
    log.raw('{"type":"heartbeat","run_id":"run-a","seq":3,"ts":3.0,"payl\n')
    log.raw(
        '{"type":"heartbeat","run_id":"run-a","seq":4,"ts":4.0,"payload":{"global_step":"x"}}\n'
    )
    log.beats(5)
    batch = read_events(log.path)
    assert steps_of(batch.events[1:]) == [1, 5]
    assert [(s.line_no, s.kind) for s in batch.skipped] == [(3, "malformed"), (4, "malformed")]
    assert "payload.global_step" in batch.skipped[1].detail


def test_unknown_kind_is_skipped_and_counted(log: LogBuilder) -> None:
    log.beats(1)
    log.raw('{"type":"gpu_stats","run_id":"run-a","seq":2,"ts":2.0,"payload":{"util":0.9}}\n')
    log.beats(3)
    batch = read_events(log.path)
    assert steps_of(batch.events) == [1, 3]
    (skipped,) = batch.skipped
    assert (skipped.line_no, skipped.kind) == (2, "unknown_kind")
    assert "gpu_stats" in skipped.detail


def test_newer_minor_schema_with_extra_fields_reads_fine(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    started = {
        "type": "run_started",
        "run_id": "r",
        "seq": 1,
        "ts": 1.0,
        "region": "eu",
        "payload": {
            "schema": 1,
            "schema_minor": 4,
            "trainer": {"name": "x", "build": 7},
            "gpu_count": 8,
        },
    }
    update = {
        "type": "ppo_update",
        "run_id": "r",
        "seq": 2,
        "ts": 2.0,
        "payload": {
            "update": 0,
            "global_step": 8,
            "approx_kl": 0.01,
            "clip_fraction": 0.1,
            "early_stopped": False,
            "kl_to_reference": 0.2,
        },
    }
    path.write_text(json.dumps(started) + "\n" + json.dumps(update) + "\n")
    batch = read_events(path)
    assert batch.skipped == []
    first, second = batch.events
    assert isinstance(first, RunStarted) and first.payload.schema_minor == 4
    assert second.payload.approx_kl == 0.01  # type: ignore[union-attr]


@pytest.mark.parametrize("decodable", [True, False], ids=["same-shape", "new-shape"])
def test_newer_major_schema_is_refused_naming_both_versions(
    tmp_path: Path, decodable: bool
) -> None:
    trainer: object = {"name": "x"} if decodable else "x 2.0"
    started = {
        "type": "run_started",
        "run_id": "r",
        "seq": 1,
        "ts": 1.0,
        "payload": {"schema": 2, "trainer": trainer},
    }
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(started) + "\n")
    with pytest.raises(
        SchemaVersionError, match="schema 2 is newer than the supported schema 1"
    ) as info:
        read_events(path)
    assert (info.value.found, info.value.supported) == (2, 1)


def test_truncation_is_detected_and_reading_restarts(log: LogBuilder) -> None:
    log.beats(1, 2, 3)
    reader = EventLogReader(log.path)
    assert steps_of(reader.read_new().events) == [1, 2, 3]
    os.truncate(log.path, 0)
    log.beats(4)
    batch = reader.read_new()
    assert batch.reset is not None and "truncated" in batch.reset
    assert steps_of(batch.events) == [4]
    assert not reader.read_new()  # the reset happens once; nothing is delivered twice
    log.beats(5)
    assert steps_of(reader.read_new().events) == [5]


def test_replacement_is_detected_and_reading_restarts(log: LogBuilder, tmp_path: Path) -> None:
    log.beats(1, 2)
    reader = EventLogReader(log.path)
    reader.read_new()
    other = LogBuilder(tmp_path / "new.jsonl", run_id="run-b")
    other.beats(10, 20, 30, 40)
    other.close()
    os.replace(other.path, log.path)
    batch = reader.read_new()
    assert batch.reset is not None and "replaced" in batch.reset
    assert steps_of(batch.events) == [10, 20, 30, 40]
    assert {e.run_id for e in batch.events} == {"run-b"}
    assert not reader.read_new()
    assert not reader.read_new()


def test_rewrite_in_place_is_detected(log: LogBuilder) -> None:
    log.beats(1)
    reader = EventLogReader(log.path)
    reader.read_new()
    content = log.path.read_bytes().replace(b'"run-a"', b'"run-z"')
    with log.path.open("r+b") as f:  # same inode, same size, different bytes
        f.write(content)
        f.write(content)
    batch = reader.read_new()
    assert batch.reset is not None and "rewritten" in batch.reset
    assert len(batch.events) == 2 and batch.events[0].run_id == "run-z"
    assert not reader.read_new()


def test_small_reads_resume_exactly(log: LogBuilder) -> None:
    log.beats(*range(50))
    reader = EventLogReader(log.path)
    seen: list[int] = []
    for batch in reader.batches(max_bytes=300):  # forces many bounded reads
        seen += steps_of(batch.events)
    assert seen == list(range(50))
    assert reader.line_no == 50


def test_a_snapshot_read_stops_at_the_size_it_began_with(log: LogBuilder) -> None:
    """A writer that appends after every batch cannot keep a snapshot read going: it ends
    at the size of the file at its first read, the straddling line read whole."""
    log.beats(*range(20))
    size = log.path.stat().st_size
    reader = EventLogReader(log.path)
    seen: list[int] = []
    for batch in reader.batches(max_bytes=100, snapshot=True):
        seen += steps_of(batch.events)
        log.beats(1000 + len(seen))  # the writer keeps going
    assert seen == list(range(20))
    assert reader.snapshot_limit == size and reader.offset == size
    assert steps_of(next(reader.batches()).events)[0] == 1001  # a plain read goes on


def test_line_longer_than_one_read_is_read_whole(log: LogBuilder) -> None:
    log.beats(1)
    reader = EventLogReader(log.path)
    assert steps_of(reader.read_new(max_bytes=16).events) == [1]


def test_line_without_a_type_is_malformed(log: LogBuilder) -> None:
    log.raw('{"run_id":"run-a","seq":1,"ts":1.0}\n')
    (skipped,) = read_events(log.path).skipped
    assert (skipped.kind, skipped.detail) == ("malformed", "no 'type' field: not an event")


def test_refused_schema_consumes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = LogBuilder(path, run_id="run-a")
    log.beats(1)
    log.raw(
        '{"type":"run_started","run_id":"r","seq":2,"ts":1.0,"payload":{"schema":3,"trainer":{"name":"x"}}}\n'
    )
    log.close()
    reader = EventLogReader(path)
    for _ in range(2):  # refused every time, and the offset does not move past it
        with pytest.raises(SchemaVersionError, match=r"events\.jsonl:2: event log schema 3"):
            reader.read_new()
        assert reader.offset == 0


def test_skipped_lines_past_the_cap_are_counted_not_listed(log: LogBuilder) -> None:
    from telemetry.eventlog import SKIPPED_KEPT

    log.raw("not json\n" * (SKIPPED_KEPT + 50))
    log.raw('{"type":"ppo_update","payload":{}}\n' * 3)  # another class: listed in full
    reader = EventLogReader(log.path)
    batches = list(reader.batches(max_bytes=4096))
    listed = [s for b in batches for s in b.skipped]
    assert sum(b.skipped_count for b in batches) == reader.skipped_total == SKIPPED_KEPT + 53
    assert [s.line_no for s in listed] == [*range(1, SKIPPED_KEPT + 1), *range(1051, 1054)]
    unlisted = {k: sum(b.unlisted.get(k, 0) for b in batches) for k in [("malformed", None)]}
    assert unlisted == {("malformed", None): 50}
    assert len(reader.skipped) == SKIPPED_KEPT
    assert reader.skipped[-1].line_no == SKIPPED_KEPT


def test_a_stretch_of_blank_lines_longer_than_a_read_does_not_end_the_batches(
    log: LogBuilder,
) -> None:
    log.beats(1)
    log.raw("\n" * 5000)  # more than a read's worth of nothing
    log.beats(2)
    batches = list(EventLogReader(log.path).batches(max_bytes=1024))
    assert steps_of([e for b in batches for e in b.events]) == [1, 2]
