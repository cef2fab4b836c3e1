"""A line is read the same way whatever its neighbours: the reader's fast path (one
``decode_lines`` over a whole chunk) accepts only what decoding each line alone accepts.

``decode_lines`` reads JSON values separated by any whitespace, so a line holding two
events, with a blank line elsewhere in the same chunk keeping the count of values equal to
the count of lines, used to be read as two events, while the same line in a chunk without
a blank line was skipped: an unrelated line flipped acceptance (and ``check``'s exit code).
Two events on one line are one malformed line, wherever it is.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telemetry.codec import encode_line
from telemetry.eventlog import DEFAULT_MAX_BYTES, EventLogReader
from telemetry.events import HeartbeatPayload, PPOUpdatePayload
from tests.telemetry.test_reader_fuzz import REAL, envelope_for, mutated

Skip = tuple[int, str, str, str | None]
Outcome = tuple[list[bytes], list[Skip]]
"""Each event re-encoded (a NaN is not equal to itself) and (line, kind, detail, type) of
each skip."""


def read(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Outcome:
    """Events and skips of the whole file, read ``max_bytes`` at a time."""
    events: list[bytes] = []
    skipped: list[Skip] = []
    for batch in EventLogReader(path).batches(max_bytes):
        events += [encode_line(e) for e in batch.events]
        skipped += [(s.line_no, s.kind, s.detail, s.event_type) for s in batch.skipped]
    return events, skipped


_ALONE: dict[bytes, Outcome] = {}


def read_alone(lines: list[bytes], work: Path) -> Outcome:
    """What each line gives when it is the only line of a file, numbered as in the whole."""
    events: list[bytes] = []
    skipped: list[Skip] = []
    path = work / "alone.jsonl"
    for line_no, line in enumerate(lines, 1):
        if line not in _ALONE:
            path.write_bytes(line + b"\n")
            _ALONE[line] = read(path)
        alone_events, alone_skipped = _ALONE[line]
        events += alone_events
        skipped += [(line_no, kind, detail, type_) for _, kind, detail, type_ in alone_skipped]
    return events, skipped


GOOD = [line.rstrip(b"\n") for line in REAL]
two_events = st.tuples(
    st.sampled_from(GOOD), st.sampled_from([b"", b" ", b"\t"]), st.sampled_from(GOOD)
).map(b"".join)
line = st.one_of(
    st.sampled_from(GOOD),
    two_events,
    st.sampled_from([b"", b" ", b"\t", b"\r", b"  \t "]),  # blank, or whitespace only
    mutated().map(lambda m: m.replace(b"\n", b"")),
    st.binary(max_size=24).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from(GOOD).map(lambda g: b" " + g + b"\r"),  # one event, whitespace around
    st.sampled_from(GOOD).map(lambda g: g[: len(g) // 2]),  # half of an object
)
WORK = Path(tempfile.mkdtemp(prefix="reader-neighbours-"))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(line, min_size=1, max_size=12),
    max_bytes=st.sampled_from([64, 300, 1024, DEFAULT_MAX_BYTES]),
)
def test_each_line_is_read_as_it_would_be_alone(lines: list[bytes], max_bytes: int) -> None:
    path = WORK / "whole.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    assert read(path, max_bytes) == read_alone(lines, WORK)


def test_two_events_on_one_line_are_one_malformed_line_whatever_the_chunk_holds(
    tmp_path: Path,
) -> None:
    heartbeat = encode_line(envelope_for(HeartbeatPayload(global_step=8), 1))
    update = encode_line(
        envelope_for(
            PPOUpdatePayload(
                update=0, global_step=8, approx_kl=9.0, clip_fraction=0.1, early_stopped=False
            ),
            2,
        )
    )
    two = heartbeat.rstrip(b"\n") + update  # one line holding two events
    for neighbour in (b"", b"\n", b"not json\n"):  # no neighbour, a blank line, a bad line
        path = tmp_path / "events.jsonl"
        path.write_bytes(heartbeat + neighbour + two + heartbeat)
        batch = EventLogReader(path).read_new()
        assert len(batch.events) == 2, neighbour  # the two lines around it, nothing else
        bad = [s for s in batch.skipped if s.line_no == (3 if neighbour else 2)]
        assert [(s.kind, s.event_type) for s in bad] == [("malformed", "heartbeat")]
        assert "trailing characters" in bad[0].detail
