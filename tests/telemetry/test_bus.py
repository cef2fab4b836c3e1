"""EventBus fan-out and failure reporting; Emitter envelope stamping; capture_events."""

from __future__ import annotations

import gc
import threading

import pytest

from telemetry.bus import Emitter, EventBus, SinkError
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
