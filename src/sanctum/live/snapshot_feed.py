"""The reading loop behind the dashboard: file -> aggregator -> one frozen snapshot a frame.

It runs in a thread (the app starts it with ``@work(thread=True)``) and owns the
aggregator outright, so aggregation never races the UI and never blocks it. The UI gets
a :class:`~sanctum.model.snapshot.SanctumSnapshot` through ``publish`` and asks for the next one
with ``taken`` when its next frame may be drawn. Until then the loop reads on only while a
backlog remains (a long log opened mid-run), then sleeps: the file is read again when the
UI asks, so a snapshot is built per frame, not per batch, it holds everything written
until that moment, and a trainer writing twenty updates a second costs one read per frame
rather than a look every ``poll_interval`` (the habit of toolong's ``log_lines.py``:
coalesce a fast log into fewer, newer snapshots, never a growing message queue). Only
while the UI waits is the file polled, and the first new line is posted at once: it is
looked at every ``poll_interval``, and every ``HOLD_POLL_INTERVAL`` around when the
trainer's next line is due by its last gap, so a frame follows a line by a few
milliseconds. Lines that piled up during a slot of a fast trainer wait for its next line,
so frames are drawn as lines arrive (:meth:`SnapshotFeed.taken`). There is no Textual
here: the loop is driven and tested with plain callables.

Replay paces events by their ``ts`` deltas divided by the speed, with long gaps capped,
and keeps a virtual clock so "elapsed" and "stale" read as they did during the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.live.file_watch import FileWatch
from sanctum.live.pacing import (
    POLL_INTERVAL,
    FeedCallbacks,
    Handshake,
)
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.snapshot import SanctumSnapshot
from telemetry.eventlog import EventLogError, EventLogNotFound, ReadBatch, open_reader
from telemetry.events import Event

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; only read by the type checker

UI_WAIT_SECONDS = 0.25
"""Longest sleep while the UI draws: it wakes the loop when it takes the snapshot, so
this only bounds how long a closing app waits for the loop to notice."""
PACE_TOLERANCE = 0.02
"""How near in time two moments of a trainer's pace count as one (see ``arrival_wait``):
a file written this recently has just had a line; lines this close came in one write (a
rollout and its update); a next write due this much past the slot still fits it, and
one this late is overdue. One figure for all four, because each asks the same question
of the same pace: a trainer's timing jitters by a few milliseconds, and anything finer
than the look interval after a write (``HOLD_POLL_INTERVAL``) cannot be seen anyway."""
HOLD_POLL_INTERVAL = 0.005
"""Seconds between looks while lines wait for the next line (see ``SnapshotFeed.taken``),
from the moment it is due: it is drawn about 2 ms after it arrives, for a few looks a
frame."""
MAX_REPLAY_GAP = 2.0
"""Longest real-time pause of a replay, in seconds, however long the recorded gap."""


def arrival_wait(
    now: float,
    stamps: Sequence[float],
    written: float | None,
    slot: float,
    before: float | None = None,
) -> float:
    """Seconds the lines read as a redraw slot opens wait for the next line.

    ``stamps`` are their ``ts`` in file order, ``written`` the file's last write, ``before``
    the ``ts`` of the last line read before them (None: none). They wait only when the
    trainer's pace is known from several writes (gaps of ``PACE_TOLERANCE`` or more between
    them, or from ``before`` to them: a trainer faster than the slot) and the next write,
    due one gap after the last, comes before the oldest of them is ``slot`` old (give or
    take ``PACE_TOLERANCE``: a trainer's pace jitters, and a pace that fills a slot exactly
    must not make frames alternate); then until it is due, plus ``PACE_TOLERANCE``, at
    most. Never when the last write is
    fresh: a line has just arrived. ``now``, the stamps and ``written`` are read as one
    clock (the feed's: the wall clock outside tests); a writer whose clock disagrees, or
    a file system with coarse mtimes, can shorten the wait to 0 or stretch it to
    ``slot``, no further."""
    if written is not None and 0 <= now - written <= PACE_TOLERANCE:
        return 0.0
    paced = stamps if before is None or not stamps else (before, *stamps)
    gap = max((b - a for a, b in pairwise(paced)), default=0.0)
    if gap < PACE_TOLERANCE or stamps[-1] + gap > stamps[0] + slot + PACE_TOLERANCE:
        return 0.0
    wait = stamps[-1] + gap + PACE_TOLERANCE - now
    return min(wait, slot) if wait > 0 else 0.0  # NaN (a hostile ts): no wait


class ReplayClock:
    """Time as the recorded run saw it: the last replayed ``ts`` plus scaled real time.

    Between two events the virtual time never passes the next event's ``ts``, so a
    capped gap does not make a replayed run look stale.
    """

    def __init__(self, speed: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.speed = speed
        self._monotonic = monotonic
        self._ts: float | None = None
        self._at = 0.0
        self._limit: float | None = None

    def mark(self, ts: float, at: float) -> None:
        """The event stamped ``ts`` is shown at monotonic time ``at``."""
        self._ts, self._at, self._limit = ts, at, None

    def expect(self, ts: float) -> None:
        """The next event is stamped ``ts``: virtual time stops there until it is shown."""
        self._limit = ts

    def __call__(self) -> float | None:
        """The virtual time, or None before the first event."""
        if self._ts is None:
            return None
        now = self._ts + (self._monotonic() - self._at) * self.speed
        return now if self._limit is None else min(now, self._limit)


class FeedOptions(TypedDict, total=False):
    """How a :class:`SnapshotFeed` reads, beside its log and rules; the dashboard passes
    them through as they are."""

    clock: Callable[[], float]
    """The wall clock snapshots are judged at (default ``time.time``)."""
    poll_interval: float
    """Seconds between looks at a log with nothing new (default ``POLL_INTERVAL``)."""
    max_replay_gap: float
    """The longest a replay waits between two events (default ``MAX_REPLAY_GAP``)."""
    monotonic: Callable[[], float]
    """The clock a replay and the frame pace count with (default ``time.monotonic``)."""
    sleep: Callable[[float], None]
    """How the loop waits (default: a nap the UI can cut short)."""
    fail_on: Level
    """The level at which a rule fails the run (default critical)."""


class SnapshotFeed(Handshake):
    """Follows (or replays) one event log into a :class:`SanctumAggregator`."""

    def __init__(
        self,
        path: Path,
        thresholds: Thresholds,
        *,
        replay_speed: float | None = None,
        **options: Unpack[FeedOptions],
    ) -> None:
        if replay_speed is not None and not replay_speed > 0:
            raise ValueError(f"replay speed must be > 0, got {replay_speed}")
        super().__init__()
        self.path = path
        self.reader = open_reader(path)
        self._watch = FileWatch(path)
        self.aggregator = SanctumAggregator(
            thresholds, fail_on=options.get("fail_on", Level.CRITICAL)
        )
        self.poll_interval = options.get("poll_interval", POLL_INTERVAL)
        self.max_replay_gap = options.get("max_replay_gap", MAX_REPLAY_GAP)
        self._clock = options.get("clock", time.time)
        self._monotonic = monotonic = options.get("monotonic", time.monotonic)
        self._sleep_for = options.get("sleep", self._nap)
        self._replay = ReplayClock(replay_speed, monotonic) if replay_speed is not None else None
        self._dirty = True  # the first snapshot (WAITING) is owed at once
        self._opened = 0.0
        """The redraw slot the UI has just opened (see :meth:`taken`); 0 once read. The
        loop swaps it for 0 unlocked: a slot opened in between only goes without a wait."""
        self._hold_until: float | None = None
        """Monotonic time until which folded lines wait for the next line (None: no wait)."""
        self._last_ts: float | None = None
        """The ``ts`` of the last line read (live, not replayed)."""
        self._due: float | None = None
        """Monotonic time the trainer's next line is due, by its last gap (None: unknown)."""

    def now(self) -> float:
        """The clock snapshots are taken with: the replay's virtual time while it replays."""
        replay = self._replay  # read once: the reader thread ends the replay meanwhile
        virtual = replay() if replay is not None else None
        return self._clock() if virtual is None else virtual

    def taken(self, slot: float = 0.0) -> None:
        """The UI has used the last published snapshot and wants the next one: it is
        posted as soon as anything new was read (at once when something already was).

        With ``slot`` (a redraw slot that long has just opened), lines from several writes
        during the slot wait for the trainer's next line when it is due soon (see
        :func:`arrival_wait`), so the frame is drawn as a line arrives, not at a moment
        unrelated to the trainer: a trainer writing every 50 ms into 150 ms slots gets a
        frame every fourth update, drawn as that update arrives, and the three before it
        waited 50, 100 and 150 ms; at the same frame rate on a timer, an update waits
        on average half a trainer interval more. Waiting ends with the next line, or when
        it is overdue."""
        self._opened = slot
        if slot <= 0:  # paused, say: what waits is wanted now
            self._hold_until = None
        self._ui_free.set()
        self._wake.set()

    @property
    def folded_update(self) -> int | None:
        """The latest update index folded so far (read from the UI thread: tests only)."""
        latest = self.aggregator.tamiyo.latest
        return None if latest is None else latest.update

    @property
    def pending(self) -> bool:
        """Events were folded that no published snapshot holds yet, or the file changed
        since it was last read (it is read again when the UI takes the next snapshot)."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            size = self.reader.size
        return self._dirty or size != self.reader.size

    def rejudge(self) -> None:
        """Post a snapshot judged at the current time though nothing new was read: a
        silent run's stall and verdict depend on how long it has been silent."""
        self._dirty = True
        self._wake.set()

    def run(self, callbacks: FeedCallbacks[SanctumSnapshot]) -> None:
        """Read until ``callbacks.stopped()``; returns early only on an unusable log."""
        while not callbacks.stopped():
            opened, self._opened = self._opened, 0.0
            try:
                batch = self._read()
            except EventLogError as exc:  # unreadable or a newer schema: nothing to follow
                self._hold_until = None  # what was read is all there will be: show it
                self._flush(callbacks)
                callbacks.notice(str(exc), "error")
                return
            if batch.reset is not None:
                callbacks.notice(batch.reset, "warning")
            if not batch:
                self._caught_up()
                self._flush(callbacks)
                self._idle(callbacks)
            elif self._replay is not None:
                self._replay_batch(batch, self._replay, callbacks)
            else:
                self.aggregator.handle_batch(batch)
                self._dirty = True
                self._arrived(batch, opened)
                self._flush(callbacks)
        self._flush(callbacks)

    def _read(self) -> ReadBatch:
        """What was appended since the last read; nothing, unread, while the file looks
        as it did when a read last found nothing (see :class:`FileWatch`)."""
        read, seen = self._watch.before_read()
        if not read:
            return ReadBatch()
        offset = self.reader.offset
        try:
            batch = self.reader.read_new()
        except EventLogNotFound:
            batch = ReadBatch()
        self._watch.after_read(seen, found=bool(batch) or self.reader.offset != offset)
        return batch

    def _idle(self, callbacks: FeedCallbacks[SanctumSnapshot]) -> None:
        """Caught up. While the UI has not taken the last snapshot, sleep until it does:
        the file is read then, so the next frame holds everything written until it, and a
        trainer writing twenty updates a second costs one read per frame, not a look every
        ``poll_interval``. Once the UI waits, look for new lines every ``poll_interval``;
        while folded lines wait for the next one, every ``HOLD_POLL_INTERVAL`` from when
        it is due."""
        until = self._hold_until
        if self._ui_free.is_set() and until is not None:  # look every 20 ms until due
            due = until - PACE_TOLERANCE - self._monotonic()
            self._sleep(min(max(due, HOLD_POLL_INTERVAL), self.poll_interval), callbacks)
        elif self._ui_free.is_set():
            self._sleep(self._next_look(), callbacks)
        while not (self._ui_free.is_set() or callbacks.stopped()):
            self._sleep_for(UI_WAIT_SECONDS)

    def _next_look(self) -> float:
        """Seconds until the next look while the UI waits: every ``HOLD_POLL_INTERVAL``
        from ``PACE_TOLERANCE`` before the trainer's next line is due until as long after
        it, so a frame follows the line within a few milliseconds; else (the pace unknown,
        the line not due yet, or late) every ``poll_interval``."""
        due = self._due
        if due is None:
            return self.poll_interval
        ahead = due - self._monotonic()
        if ahead < -PACE_TOLERANCE:  # late: the trainer slowed down or stopped
            self._due = None
            return self.poll_interval
        return min(max(ahead - PACE_TOLERANCE, HOLD_POLL_INTERVAL), self.poll_interval)

    def _arrived(self, batch: ReadBatch, opened: float) -> None:
        """Lines were folded: read as a slot of ``opened`` seconds opened, they may wait
        for the next line (see :meth:`taken`); read by a later look, they just arrived,
        and end any wait. Either way they tell when the next line is due."""
        stamps = [event.ts for event in batch.events]
        before = self._last_ts
        self._pace(stamps)
        if opened <= 0:
            self._hold_until = None
            return
        try:
            written = os.stat(self.path).st_mtime
        except OSError:
            written = None
        wait = arrival_wait(self._clock(), stamps, written, opened, before)
        self._hold_until = self._monotonic() + wait if wait > 0 else None

    def _pace(self, stamps: Sequence[float]) -> None:
        """Note when the trainer's next line is due: one gap between its writes (lines
        ``PACE_TOLERANCE`` or more apart) after its last line, on the monotonic clock."""
        last, gap = self._last_ts, None
        for ts in stamps:
            if last is not None and ts - last >= PACE_TOLERANCE:
                gap = ts - last
            last = ts
        self._last_ts = last
        if gap is None or last is None:
            self._due = None
            return
        ahead = last + gap - self._clock()
        self._due = self._monotonic() + ahead if ahead > 0 else None  # NaN: unknown

    def _holding(self) -> bool:
        """Folded lines still wait for the next line (see :meth:`taken`)."""
        until = self._hold_until
        if until is not None and self._monotonic() >= until:
            self._hold_until = until = None
        return until is not None

    def _caught_up(self) -> None:
        """At the end of the file a replay becomes a live follow on the wall clock."""
        if self._replay is not None and self._replay() is not None:
            self._replay = None

    def _flush(self, callbacks: FeedCallbacks[SanctumSnapshot]) -> None:
        """Post a snapshot if something changed and the UI took the previous one."""
        if self._dirty and self._ui_free.is_set() and not self._holding():
            self._ui_free.clear()
            self._dirty = False
            callbacks.publish(self.aggregator.snapshot(self.now()))

    def _sleep(self, seconds: float, callbacks: FeedCallbacks[SanctumSnapshot]) -> None:
        """Sleep in short steps, posting owed snapshots and honouring a stop."""
        deadline = self._monotonic() + seconds
        while not callbacks.stopped():
            self._flush(callbacks)
            left = deadline - self._monotonic()
            if left <= 0:
                return
            self._sleep_for(min(left, self.poll_interval))

    def _replay_batch(
        self, batch: ReadBatch, clock: ReplayClock, cb: FeedCallbacks[SanctumSnapshot]
    ) -> None:
        if batch.skipped or batch.unlisted or batch.reset or batch.tail is not None:
            self.aggregator.handle_batch(
                ReadBatch([], batch.skipped, batch.reset, batch.unlisted, batch.tail)
            )
            self._dirty = True
        for event in batch.events:
            if cb.stopped():
                return
            self._wait_for(event, clock, cb)
            self.aggregator.handle(event)
            self._dirty = True
            self._flush(cb)

    def _wait_for(
        self, event: Event, clock: ReplayClock, cb: FeedCallbacks[SanctumSnapshot]
    ) -> None:
        """Hold ``event`` back until its recorded delay (scaled, capped) has passed."""
        previous = clock()
        if previous is None:
            clock.mark(event.ts, self._monotonic())
            return
        clock.expect(event.ts)
        gap = max(0.0, event.ts - previous) / clock.speed
        self._sleep(min(gap, self.max_replay_gap), cb)
        clock.mark(event.ts, self._monotonic())
