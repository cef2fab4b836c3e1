"""Property-based fuzzing of the reader's contract (hypothesis).

Streams are built from real event lines, mutations of them (flipped, dropped and inserted
bytes, cut lines), random JSON and random bytes, and appended to a real file in random
chunks while a reader follows it. Invariants:

- reading never raises (only a newer major schema is refused, as documented);
- every complete, non-blank line is either an event or a skipped line with its number;
- following the file chunk by chunk yields exactly the events and skips of one clean read;
- the bytes after the last newline are pending, never an event.

The number of examples comes from the hypothesis profile (tests/conftest.py): 2,000 by
default and in CI, more with ``HYPOTHESIS_PROFILE=long``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from telemetry.codec import encode_line
from telemetry.eventlog import EventLogReader, SchemaVersionError
from telemetry.events import (
    EVENT_FOR_PAYLOAD,
    AnomalyPayload,
    EarlyStop,
    Event,
    HeartbeatPayload,
    Payload,
    PPOUpdatePayload,
    RolloutPayload,
    RunFinishedPayload,
    RunStarted,
    RunStartedPayload,
    TrainerInfo,
)


def envelope_for(payload: Payload, seq: int) -> Event:
    kind = EVENT_FOR_PAYLOAD[type(payload)]
    return kind(run_id="fuzz", seq=seq, ts=1.5, payload=payload)  # type: ignore[call-arg, return-value]


def real_lines() -> list[bytes]:
    """One line of every kind, as the writer writes them (NaN and Inf included)."""
    payloads = [
        RunStartedPayload(trainer=TrainerInfo(name="fuzz", version="1"), env_id="CartPole-v1"),
        RolloutPayload(update=0, global_step=512, episodes=3, episode_return_mean=21.5),
        PPOUpdatePayload(
            update=0,
            global_step=512,
            approx_kl=0.0123,
            clip_fraction=0.1,
            early_stopped=True,
            grad_norm=float("nan"),
            value_loss=float("inf"),
            early_stop_reason="approx_kl 0.0412 > max_kl 0.0300 at epoch 2 minibatch 3",
            early_stop=EarlyStop(
                epoch=2, minibatch=3, kl=0.04, threshold=0.03, scope="minibatch", applied=False
            ),
        ),
        AnomalyPayload(severity="critical", metric="grad_norm", message="skipped \x1b[2J"),
        HeartbeatPayload(global_step=600),
        RunFinishedPayload(status="failed", reason="KeyError: '[/]'"),
    ]
    return [encode_line(envelope_for(p, seq)) for seq, p in enumerate(payloads, 1)]


REAL = real_lines()
json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A real line with a few bytes flipped, dropped or inserted (its newline may go)."""
    line = bytearray(draw(st.sampled_from(REAL)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(line)))
        action = draw(st.sampled_from(["flip", "drop", "insert"]))
        if action == "insert" or at == len(line):
            line[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif action == "drop":
            del line[at]
        else:
            line[at] ^= draw(st.integers(1, 255))
    return bytes(line)


piece = st.one_of(
    st.sampled_from(REAL),
    mutated(),
    json_values.map(lambda v: json.dumps(v).encode() + b"\n"),
    st.dictionaries(st.sampled_from(["type", "run_id", "seq", "ts", "payload"]), json_values).map(
        lambda v: json.dumps(v).encode() + b"\n"
    ),
    st.binary(max_size=40),
)
streams = st.lists(piece, max_size=12).map(b"".join)


def complete_lines(data: bytes) -> list[bytes]:
    """The lines a reader must account for: ended by a newline, not blank."""
    return [line for line in data.split(b"\n")[:-1] if line.strip()]


def newer_schema(data: bytes) -> bool:
    """Whether a line is a run_started of a newer major schema (the reader refuses it)."""
    decoder = msgspec.json.Decoder(RunStarted, strict=False)
    for line in data.split(b"\n"):
        try:
            if decoder.decode(line).payload.schema > 1:
                return True
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            continue
    return False


def read_all(path: Path) -> tuple[list[Event], list[tuple[int, str]], EventLogReader]:
    reader = EventLogReader(path)
    events: list[Event] = []
    skipped: list[tuple[int, str]] = []
    for batch in reader.batches():
        events += batch.events
        skipped += [(s.line_no, s.kind) for s in batch.skipped]
    return events, skipped, reader


SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORK = Path(tempfile.mkdtemp(prefix="reader-fuzz-"))
"""One folder for every example (a folder per example costs more than the example)."""


@SETTINGS
@given(streams)
def test_every_complete_line_is_an_event_or_a_numbered_skip(data: bytes) -> None:
    assume(not newer_schema(data))
    path = WORK / "whole.jsonl"
    path.write_bytes(data)
    events, skipped, reader = read_all(path)
    lines = complete_lines(data)
    assert len(events) + len(skipped) == len(lines)
    numbers = [n for n, _ in skipped]
    assert numbers == sorted(set(numbers))
    assert all(1 <= n <= data.count(b"\n") for n in numbers)
    assert reader.pending_bytes == len(data) - (data.rfind(b"\n") + 1)


@SETTINGS
@given(streams, st.lists(st.integers(1, 400), min_size=1, max_size=20))
def test_following_in_chunks_reads_what_one_clean_read_reads(
    data: bytes, chunk_sizes: list[int]
) -> None:
    assume(not newer_schema(data))
    clean_path = WORK / "clean.jsonl"
    clean_path.write_bytes(data)
    expected_events, expected_skipped, _ = read_all(clean_path)

    path = WORK / "followed.jsonl"
    path.unlink(missing_ok=True)
    path.touch()
    reader = EventLogReader(path)
    events: list[Event] = []
    skipped: list[tuple[int, str]] = []
    offset, sizes = 0, iter(chunk_sizes * (len(data) // sum(chunk_sizes) + 1))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        while offset < len(data):
            size = next(sizes)
            os.write(fd, data[offset : offset + size])
            offset += size
            batch = reader.read_new()
            assert batch.reset is None  # appending is never a truncation
            events += batch.events
            skipped += [(s.line_no, s.kind) for s in batch.skipped]
    finally:
        os.close(fd)
    for batch in reader.batches():
        events += batch.events
        skipped += [(s.line_no, s.kind) for s in batch.skipped]
    assert list(map(encode_line, events)) == list(map(encode_line, expected_events))  # NaN too
    assert skipped == expected_skipped


def test_a_newer_schema_is_the_one_refusal() -> None:
    line = REAL[0].replace(b'"schema":1', b'"schema":7')
    path = WORK / "newer.jsonl"
    path.write_bytes(REAL[1] + line)
    with pytest.raises(SchemaVersionError) as refused:
        read_all(path)
    assert refused.value.found == 7
