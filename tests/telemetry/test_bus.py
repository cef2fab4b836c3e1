"""EventBus fan-out and failure reporting; Emitter envelope stamping; capture_events."""

from __future__ import annotations

import gc
import math
import threading

import pytest

from telemetry.bus import Emitter, EventBus, LineSink, SinkError
from telemetry.codec import EventCheck, line_decoder
from telemetry.events import Event, Heartbeat, HeartbeatPayload, PPOUpdate, PPOUpdatePayload
from telemetry.testing import capture_events


def _beat(step: int = 1) -> HeartbeatPayload:
    return HeartbeatPayload(global_step=step)


def test_emitter_stamps_envelope_with_gapless_seq() -> None:
    bus = EventBus()
    clock = iter([10.0, 11.0, 12.0])
    emitter = Emitter(bus, "run-x", clock=lambda: next(clock))
    with capture_events(bus) as events:
        emitter.emit(_beat(1))
        emitter.emit(_beat(2))
        update = emitter.emit(
            PPOUpdatePayload(
                update=0, global_step=2, approx_kl=0.0, clip_fraction=0.0, early_stopped=False
            )
        )
    assert [(e.run_id, e.seq, e.ts) for e in events] == [
        ("run-x", 1, 10.0),
        ("run-x", 2, 11.0),
        ("run-x", 3, 12.0),
    ]
    assert isinstance(events[0], Heartbeat) and isinstance(update, PPOUpdate)


def test_seq_stays_gapless_and_ordered_across_threads() -> None:
    bus = EventBus()
    emitter = Emitter(bus, "r")
    with capture_events(bus) as events:
        threads = [
            threading.Thread(target=lambda: [emitter.emit(_beat()) for _ in range(500)])
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [e.seq for e in events] == list(range(1, 2001))


def test_failing_sink_is_named_and_others_still_receive() -> None:
    bus = EventBus()
    received: list[Event] = []

    def broken(event: Event) -> None:
        raise OSError(28, "No space left on device")

    bus.subscribe(broken, name="eventlog:/full/disk/events.jsonl")
    bus.subscribe(received.append, name="collector")
    with pytest.raises(
        SinkError, match=r"'eventlog:/full/disk/events.jsonl' failed on Heartbeat seq 1: .*No space"
    ) as info:
        Emitter(bus, "r").emit(_beat())
    assert info.value.sink_name == "eventlog:/full/disk/events.jsonl"
    assert isinstance(info.value.error, OSError)
    assert len(received) == 1


def test_subscribers_are_strongly_referenced_and_unsubscribe_works() -> None:
    bus = EventBus()
    received: list[Event] = []
    unsubscribe = bus.subscribe(lambda e: received.append(e), name="temp")
    gc.collect()
    emitter = Emitter(bus, "r")
    emitter.emit(_beat(1))
    unsubscribe()
    emitter.emit(_beat(2))
    assert len(received) == 1
    assert bus.sink_names == ()
    bus.unsubscribe(received.append)  # not subscribed: no error


def test_capture_events_unsubscribes_on_exit() -> None:
    bus = EventBus()
    emitter = Emitter(bus, "r")
    with capture_events(bus) as events:
        emitter.emit(_beat())
    emitter.emit(_beat())
    assert len(events) == 1 and bus.sink_names == ()


class _Lines:
    """A line sink that keeps what it is handed."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def write_line(self, line: bytes) -> None:
        self.lines.append(line)


def test_a_line_sink_is_handed_the_line_the_emitter_checked_and_others_the_event() -> None:
    bus = EventBus()
    lines, events = _Lines(), list[Event]()
    assert isinstance(lines, LineSink) and not isinstance(events.append, LineSink)
    bus.subscribe(lines)
    bus.subscribe(events.append)
    emitter = Emitter(bus, "run-x", clock=lambda: 5.0)
    update = emitter.emit(
        PPOUpdatePayload(update=0, global_step=2, entropy=math.nan, early_stopped=False)
    )
    beat = emitter.emit(_beat(3))
    assert events == [update, beat] and lines.events == []
    assert lines.lines == [EventCheck()(update), EventCheck()(beat)]
    assert b'"entropy":"NaN"' in lines.lines[0]
    assert [line_decoder().decode(line).seq for line in lines.lines] == [1, 2]


def test_an_event_published_without_a_line_reaches_a_line_sink_as_the_event() -> None:
    bus = EventBus()
    lines = _Lines()
    bus.subscribe(lines)
    event = Heartbeat(run_id="r", seq=1, ts=1.0, payload=_beat())
    bus.publish(event)
    assert lines.events == [event] and lines.lines == []
