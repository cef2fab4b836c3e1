"""What msgspec alone would read as an event and the reader does not: a line that is not
valid UTF-8 wherever the bytes are, a payload carrying a field of another kind alone, and a
``run_started`` whose major schema is below 1. Forward compatibility stays: unknown fields,
names several kinds share and keys inside a field's value are read as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from telemetry.eventlog import EventLogReader, SchemaVersionError, read_events
from telemetry.events import Heartbeat, PPOUpdate, PPOUpdatePayload, Rollout, RunStarted
from telemetry.testing import LogBuilder


def line(kind: str, seq: int, payload: dict[str, Any], **envelope: Any) -> bytes:
    event = {"type": kind, "run_id": "run-a", "seq": seq, "ts": 1.0, **envelope}
    return json.dumps({**event, "payload": payload}).encode() + b"\n"


UPDATE = {"update": 0, "global_step": 8, "approx_kl": 0.01, "early_stopped": False}


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        (b'"approx_kl"', b'"approx_kl\xff"'),  # a payload key msgspec skips unknown
        (b'"run_id"', b'"x\xfe": 1, "run_id"'),  # an unknown envelope key
        (b'"approx_kl": 0.01', b'"approx_kl": 0.01, "note": "\xc3("'),  # an unknown value
    ],
    ids=["payload-key", "envelope-key", "unknown-value"],
)
def test_a_line_that_is_not_valid_utf8_is_skipped_wherever_the_bytes_are(
    log: LogBuilder, good: bytes, bad: bytes
) -> None:
    log.beats(1)
    log.raw(line("ppo_update", 3, UPDATE).replace(good, bad, 1))
    log.beats(2)
    batch = read_events(log.path)
    assert [type(e) for e in batch.events] == [RunStarted, Heartbeat, Heartbeat]
    (skipped,) = batch.skipped
    assert skipped.line_no == 3 and skipped.kind == "malformed"
    assert skipped.event_type == "ppo_update" and "not valid UTF-8" in skipped.detail


@pytest.mark.parametrize(
    ("kind", "field", "owner"),
    [
        ("rollout", "early_stopped", "ppo_update"),
        ("heartbeat", "early_stopped", "ppo_update"),
        ("heartbeat", "severity", "anomaly"),
        ("heartbeat", "episodes", "rollout"),
        ("rollout", "status", "run_finished"),
        ("heartbeat", "trainer", "run_started"),
    ],
)
def test_an_unmarked_kind_whose_payload_has_another_kinds_mark_is_not_that_kind(
    log: LogBuilder, kind: str, field: str, owner: str
) -> None:
    log.raw(line(kind, 2, {"update": 0, "global_step": 8, field: 1}))
    # what still reads: names kinds share, unknown fields, nested keys, valid non-ASCII,
    # and a marked kind (told by its own required fields) with another kind's field
    log.raw(line("heartbeat", 3, {"global_step": 8, "update": 4, "gpu_temp": 60}))
    nested = {"reward_components": {"episodes": 1.0, "status": 2.0}, "episodes": 3}
    log.raw(line("ppo_update", 4, {**UPDATE, **nested, "früh": "ä€"}, région="eu"))
    log.raw(line("rollout", 5, {"update": 1, "global_step": 16, "note": {"severity": 1}}))
    log.start(config={"early_stopped": 1, "episodes": 2, "severity": "x"})
    batch = read_events(log.path)
    assert [type(e) for e in batch.events] == [
        RunStarted, Heartbeat, PPOUpdate, Rollout, RunStarted
    ]  # fmt: skip
    assert batch.events[2].payload == PPOUpdatePayload(
        update=0,
        global_step=8,
        approx_kl=0.01,
        early_stopped=False,
        reward_components={"episodes": 1.0, "status": 2.0},
    )
    (skipped,) = batch.skipped
    # its type and payload disagree: not told, so every view counts it as maybe an update
    assert (skipped.line_no, skipped.kind, skipped.event_type) == (2, "malformed", None)
    assert f"type {kind}, but its payload has {field}, a field of {owner} alone" in skipped.detail


def test_a_retagged_line_is_skipped_however_the_chunk_is_read(log: LogBuilder) -> None:
    for step in range(1, 50):
        log.beats(step)
    log.raw(line("heartbeat", 51, UPDATE))
    log.beats(60)
    whole = EventLogReader(log.path).read_new()
    small = EventLogReader(log.path)
    pieces = [small.read_new(max_bytes=300) for _ in range(200)]
    skips = [s.line_no for piece in [whole, *pieces] for s in piece.skipped]
    assert skips == [51, 51]
    assert sum(len(piece.events) for piece in pieces) == len(whole.events) == 51


@pytest.mark.parametrize("schema", [0, -5])
def test_a_schema_below_1_is_refused_as_no_schema(tmp_path: Path, schema: int) -> None:
    path = tmp_path / "events.jsonl"
    LogBuilder(path, run_id="run-a").start(schema=schema)
    with pytest.raises(SchemaVersionError, match=f":1: event log schema {schema} is not a "):
        read_events(path)
