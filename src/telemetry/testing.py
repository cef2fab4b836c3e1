"""Test helpers shipped with the library, so users' tests can assert on emitted events."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from telemetry.bus import EventBus
from telemetry.events import Event


@contextmanager
def capture_events(bus: EventBus) -> Iterator[list[Event]]:
    """Collect every event published on ``bus`` inside the block into the yielded list."""
    captured: list[Event] = []
    unsubscribe = bus.subscribe(captured.append, name="capture_events")
    try:
        yield captured
    finally:
        unsubscribe()
