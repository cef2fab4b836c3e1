"""A small synchronous event bus and the Emitter that stamps the envelope.

Fan-out is synchronous so that an event is on disk before ``emit`` returns. Subscribers
are held by strong reference (weak ones vanish silently). A failing sink does not stop
the others from receiving the event; once every sink has had it, the failure propagates
as :class:`SinkError` naming the sink, so a full disk stops training loudly. A payload the
readers would refuse is refused at ``emit``, before it takes a ``seq``
(:class:`~telemetry.codec.PayloadError` naming the field): nothing is published. The check
encodes the event's line; the Emitter publishes it with the event, and a sink that writes
lines (:class:`LineSink`: the event log's writer) is handed that line instead of encoding
the event again.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from telemetry.codec import EventCheck, PayloadError
from telemetry.events import EVENT_FOR_PAYLOAD, Event, Payload

Sink = Callable[[Event], None]
"""Anything that takes an event; it may raise to signal that it could not keep it."""


@runtime_checkable
class LineSink(Protocol):
    """A sink that writes events as lines: given the line the Emitter checked, it writes
    that line as it is (called for an event published without one, it encodes its own)."""

    def __call__(self, event: Event) -> None: ...

    def write_line(self, line: bytes) -> None:
        """Write ``line``: one event as one JSON line, newline included."""
        ...


class SinkError(RuntimeError):
    """A sink raised while handling an event; ``sink_name`` says which."""

    def __init__(self, sink_name: str, event: Event, error: BaseException) -> None:
        super().__init__(
            f"sink {sink_name!r} failed on {type(event).__name__} seq {event.seq}: "
            f"{type(error).__name__}: {error}"
        )
        self.sink_name = sink_name
        self.error = error


def _default_name(sink: Sink) -> str:
    return getattr(sink, "name", None) or getattr(sink, "__qualname__", None) or repr(sink)


class EventBus:
    """Delivers each published event to every subscriber, in subscription order."""

    def __init__(self) -> None:
        self._sinks: list[tuple[str, Sink, Callable[[bytes], None] | None]] = []
        self._lock = threading.Lock()

    def subscribe(self, sink: Sink, name: str | None = None) -> Callable[[], None]:
        """Add ``sink``; returns a function that unsubscribes it."""
        write_line = sink.write_line if isinstance(sink, LineSink) else None
        with self._lock:
            self._sinks = [*self._sinks, (name or _default_name(sink), sink, write_line)]
        return lambda: self.unsubscribe(sink)

    def unsubscribe(self, sink: Sink) -> None:
        """Remove ``sink``; removing one that is not subscribed is a no-op."""
        with self._lock:
            self._sinks = [entry for entry in self._sinks if entry[1] is not sink]

    @property
    def sink_names(self) -> tuple[str, ...]:
        """Names of the current subscribers, in delivery order."""
        return tuple(entry[0] for entry in self._sinks)

    def publish(self, event: Event, line: bytes | None = None) -> None:
        """Hand ``event`` to every sink (``line``, its checked line, to a :class:`LineSink`);
        raise :class:`SinkError` for the first that failed."""
        failure: SinkError | None = None
        for name, sink, write_line in self._sinks:  # copy-on-write: safe against (un)subscribe
            try:
                if write_line is not None and line is not None:
                    write_line(line)
                else:
                    sink(event)
            except Exception as exc:  # noqa: BLE001 - reported below with the sink's name
                if failure is None:
                    failure = SinkError(name, event, exc)
        if failure is not None:
            raise failure


class Emitter:
    """Stamps ``run_id``, ``seq`` (1, 2, 3...) and ``ts`` onto payloads and publishes them."""

    def __init__(self, bus: EventBus, run_id: str, clock: Callable[[], float] = time.time) -> None:
        self.bus = bus
        self.run_id = run_id
        self._clock = clock
        self._seq: Iterator[int] = itertools.count(1)
        self._lock = threading.Lock()
        self._check = EventCheck()

    def emit(self, payload: Payload) -> Event:
        """Wrap ``payload`` in its event kind, publish it, and return the event;
        :class:`~telemetry.codec.PayloadError` (nothing published, no ``seq`` taken) when
        the contract's readers would refuse it."""
        event_type = EVENT_FOR_PAYLOAD[type(payload)]
        with self._lock:  # seq order must equal publish order, even across threads
            seq = next(self._seq)
            event: Event = event_type(  # type: ignore[assignment]
                run_id=self.run_id, seq=seq, ts=self._clock(), payload=payload
            )
            try:
                line = self._check(event)
            except PayloadError:
                self._seq = itertools.chain((seq,), self._seq)  # not taken: the next one's
                raise
            self.bus.publish(event, line)
        return event
