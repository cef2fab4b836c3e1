"""The dashboard's reading loop without Textual: coalescing, waiting, errors, replay pacing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.pacing import POLL_INTERVAL, FeedCallbacks, Severity
from sanctum.live.snapshot_feed import (
    HOLD_POLL_INTERVAL,
    PACE_TOLERANCE,
    UI_WAIT_SECONDS,
    ReplayClock,
    SnapshotFeed,
    arrival_wait,
)
from sanctum.model.snapshot import Connection, SanctumSnapshot
from tests.sanctum.logs import T0, RunLog, write_run
from tests.telemetry.integrations.verl_logs import FileLogger, grpo_step


class FakeTime:
    """A monotonic clock that only moves when the loop sleeps; records every sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Owner:
    """Plays the app: collects snapshots and notices, takes each snapshot (or not)."""

    def __init__(self, feed: SnapshotFeed, take: bool = True, max_loops: int = 10_000) -> None:
        self.feed = feed
        self.take = take
        self.published: list[SanctumSnapshot] = []
        self.notices: list[tuple[str, Severity]] = []
        self.loops = 0
        self.max_loops = max_loops
        self.until: Callable[[Owner], bool] = lambda owner: False

    def publish(self, snapshot: SanctumSnapshot) -> None:
        self.published.append(snapshot)
        if self.take:
            self.feed.taken()

    def stopped(self) -> bool:
        self.loops += 1
        assert self.loops < self.max_loops, "the loop never reached the expected state"
        return self.until(self)

    def run(self, until: Callable[[Owner], bool]) -> None:
        self.until = until
        self.feed.run(FeedCallbacks(self.publish, self._notice, self.stopped))

    def _notice(self, text: str, severity: Severity) -> None:
        self.notices.append((text, severity))

    @property
    def last(self) -> SanctumSnapshot:
        return self.published[-1]


def feed_for(path: Path, fake: FakeTime, **kwargs: object) -> SnapshotFeed:
    return SnapshotFeed(
        path,
        DEFAULT_THRESHOLDS,
        clock=lambda: T0 + 1000.0,
        monotonic=fake.monotonic,
        sleep=fake.sleep,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_whole_log_arrives_and_finishes(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", updates=5)
    owner = Owner(feed_for(path, FakeTime()))
    owner.run(until=lambda o: bool(o.published) and o.last.connection is Connection.FINISHED)
    assert owner.last.update == 4
    assert owner.last.run.events == 1 + 5 * 2 + 1
    assert owner.notices == []


def test_snapshots_coalesce_while_the_ui_is_behind(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    log.start()
    fake = FakeTime()
    feed = feed_for(path, fake)
    owner = Owner(feed, take=False)  # the UI never takes the first snapshot
    looked = 0

    def write_while_drawing(o: Owner) -> bool:
        nonlocal looked
        if o.loops == 4:  # the loop waits for the UI by now
            assert len(o.published) == 1
            looked = len(fake.sleeps)
            for u in range(3):
                log.update(u)
        return o.loops > 10

    owner.run(until=write_while_drawing)
    assert len(owner.published) == 1, "nothing may be posted before the UI took the last one"
    assert feed.folded_update is None, "while the UI draws, the file is not read"
    assert set(fake.sleeps[looked:]) == {UI_WAIT_SECONDS}, "nor polled: it waits for the UI"
    assert feed.pending, "the file changed since it was read"
    feed.taken()
    owner.run(until=lambda o: len(o.published) == 2)
    assert owner.last.update == 2, "the next snapshot carries every batch folded meanwhile"
    log.close()


def test_waits_for_a_file_that_does_not_exist_yet(tmp_path: Path) -> None:
    path = tmp_path / "later" / "events.jsonl"
    fake = FakeTime()
    owner = Owner(feed_for(path, fake))
    owner.run(until=lambda o: o.loops > 5)
    assert [s.connection for s in owner.published] == [Connection.WAITING]
    assert fake.sleeps, "it polls politely instead of spinning"
    path.parent.mkdir()
    write_run(path, updates=2, finish=None)
    owner.run(until=lambda o: o.last.update == 1)
    assert owner.last.run.run_id == "run-test"
    assert owner.notices == []


def test_each_line_of_a_verl_job_is_in_the_next_snapshot_after_it(tmp_path: Path) -> None:
    """``sanctum job.jsonl`` started before verl's file logger opens the file."""
    path = tmp_path / "job.jsonl"
    owner = Owner(feed_for(path, FakeTime()))
    owner.run(until=lambda o: o.loops > 5)
    with FileLogger(path) as verl:
        for step in (1, 2, 3):
            seen = len(owner.published)
            verl.log(grpo_step(step), step=step)
            owner.run(until=lambda o, seen=seen: len(o.published) > seen)  # type: ignore[misc]
            assert owner.published[seen].update == step - 1
    assert owner.last.run.run_id == "job" and owner.notices == []


def test_a_newer_schema_is_reported_and_ends_the_loop(newer_schema_log: Path) -> None:
    owner = Owner(feed_for(newer_schema_log, FakeTime()))
    owner.run(until=lambda o: False)  # returns by itself
    assert len(owner.notices) == 1
    text, severity = owner.notices[0]
    assert severity == "error"
    assert "schema 2" in text
    assert str(newer_schema_log) in text


def test_a_truncated_log_is_reported_and_read_again(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", updates=3, finish=None)
    owner = Owner(feed_for(path, FakeTime()))
    owner.run(until=lambda o: bool(o.published) and o.last.update == 2)
    path.write_bytes(b"")
    write_run(path, updates=1, finish=None)
    owner.run(until=lambda o: bool(o.notices) and o.last.update == 0)
    assert owner.notices[0][1] == "warning"
    assert "truncated" in owner.notices[0][0] or "replaced" in owner.notices[0][0]


def test_replay_paces_events_by_their_timestamps(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", updates=2)  # 6 events, one second apart
    fake = FakeTime()
    owner = Owner(feed_for(path, fake, replay_speed=4.0))
    owner.run(until=lambda o: bool(o.published) and o.last.connection is Connection.FINISHED)
    assert sum(fake.sleeps) == pytest.approx(5 * 1.0 / 4.0)
    assert owner.last.now == pytest.approx(T0 + 6.0), "the virtual clock reads the run's time"


def test_replay_caps_long_gaps(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    log.start()
    log.now += 3600.0  # an hour of silence in the recording
    log.update(0)
    log.finish()
    log.close()
    fake = FakeTime()
    owner = Owner(feed_for(path, fake, replay_speed=1.0, max_replay_gap=2.0))
    owner.run(until=lambda o: bool(o.published) and o.last.connection is Connection.FINISHED)
    assert sum(fake.sleeps) == pytest.approx(2.0 + 1.0 + 1.0)
    assert Connection.STALE not in {s.connection for s in owner.published}


def test_replay_clock_never_passes_the_next_event() -> None:
    fake = FakeTime()
    clock = ReplayClock(10.0, fake.monotonic)
    assert clock() is None
    clock.mark(100.0, at=0.0)
    fake.now = 0.5
    assert clock() == pytest.approx(105.0)
    clock.expect(102.0)
    assert clock() == pytest.approx(102.0)


def test_replay_speed_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="replay speed must be > 0, got 0"):
        SnapshotFeed(tmp_path / "x.jsonl", DEFAULT_THRESHOLDS, replay_speed=0.0)


SLOT = 0.15


@pytest.mark.parametrize(
    ("stamps", "written", "wait"),
    [
        ([10.00, 10.05], 10.05, 0.04),  # due at 10.10 (one gap on): wait until 10.12
        ([10.00, 10.00], 10.00, 0.0),  # one write (a rollout and its update): no wait
        ([10.00], 10.00, 0.0),
        ([10.00, 10.09, 10.095], 10.095, 0.0),  # due 10.185: oldest 0.185 old, > a slot
        ([10.00, 10.05, 10.10], 10.10, 0.09),  # due at 10.15, the oldest a slot old: wait
        ([9.97, 10.01, 10.05], 10.05, 0.03),  # due at 10.09: wait until 10.11
        ([10.00, 10.05], 10.07, 0.0),  # the file was written 10 ms ago: a line just arrived
        ([10.00, 10.05], 10.09, 0.04),  # ...or later than now (another clock): not fresh
        ([9.00, 9.05], 9.05, 0.0),  # long overdue: draw now
        ([20.00, 20.05], None, SLOT),  # the writer's clock runs ahead: a slot at most
        ([], None, 0.0),  # only skipped lines
    ],
)
def test_arrival_wait(stamps: list[float], written: float | None, wait: float) -> None:
    assert arrival_wait(10.08, stamps, written, SLOT) == pytest.approx(wait)


@given(
    now=st.floats(),
    stamps=st.lists(st.floats(), max_size=6),
    written=st.none() | st.floats(),
    slot=st.floats(min_value=0.0, max_value=10.0),
)
def test_arrival_wait_is_never_negative_nor_longer_than_a_slot(
    now: float, stamps: list[float], written: float | None, slot: float
) -> None:
    """Whatever times a log holds (NaN, Inf, a clock years off), a wait is in [0, slot]."""
    assert 0.0 <= arrival_wait(now, stamps, written, slot) <= slot


class AlignedRun:
    """A live run whose wall clock is the fake monotonic one, written in ~50 ms steps,
    and a feed with ``SLOT`` redraw slots that has published its first snapshot."""

    def __init__(self, tmp_path: Path) -> None:
        self.fake = FakeTime()
        self.path = tmp_path / "run.jsonl"
        self.log = RunLog(self.path, t0=T0, tick=0.0)
        self.log.start()
        self.feed = SnapshotFeed(
            self.path,
            DEFAULT_THRESHOLDS,
            clock=lambda: T0 + self.fake.now,
            monotonic=self.fake.monotonic,
            sleep=self.fake.sleep,
        )
        self.owner = Owner(self.feed, take=False)
        self.owner.run(until=lambda o: len(o.published) == 1)
        self.start = self.fake.now

    def write(self, update: int, at: float) -> None:
        """Update ``update`` written ``at`` seconds after ``start`` (the file's mtime too)."""
        self.log.now = T0 + self.start + at
        self.log.update(update)
        os.utime(self.path, (self.log.now, self.log.now))

    def open_slot(self, at: float) -> None:
        """The UI takes the snapshot as a slot opens, ``at`` seconds after ``start``."""
        self.fake.now = self.start + at
        self.feed.taken(slot=SLOT)


@pytest.mark.parametrize(("late", "looks"), [(0.0, 0), (0.007, 2)])
def test_lines_read_as_a_slot_opens_wait_for_the_next_line(
    tmp_path: Path, late: float, looks: int
) -> None:
    run = AlignedRun(tmp_path)
    run.write(0, at=0.00)
    run.write(1, at=0.05)
    run.open_slot(at=0.08)  # the next line is due at 0.10: wait for it, up to 0.12
    slept = len(run.fake.sleeps)

    def arrives(o: Owner) -> bool:
        if run.fake.now >= run.start + 0.10 + late - 1e-6 and run.log.now < T0 + run.start + 0.1:
            assert len(o.published) == 1, "held: nothing drawn before the next line"
            run.write(2, at=0.10 + late)
        return len(o.published) == 2

    run.owner.run(until=arrives)
    assert run.owner.last.update == 2, "the frame is drawn as the next line arrives"
    expected = [0.02] + [HOLD_POLL_INTERVAL] * looks  # asleep until due, then a look each 5 ms
    assert run.fake.sleeps[slept:] == pytest.approx(expected, abs=1e-6)


def test_lines_wait_no_longer_than_the_next_line_is_due(tmp_path: Path) -> None:
    run = AlignedRun(tmp_path)
    run.write(0, at=0.00)
    run.write(1, at=0.05)
    run.open_slot(at=0.08)
    run.owner.run(until=lambda o: len(o.published) == 2)  # the trainer went quiet
    assert run.owner.last.update == 1
    waited = run.fake.now - (run.start + 0.08)
    assert 0.04 - 1e-6 <= waited < 0.04 + HOLD_POLL_INTERVAL


def test_a_line_before_it_is_due_is_seen_within_a_look(tmp_path: Path) -> None:
    run = AlignedRun(tmp_path)
    run.write(0, at=0.00)
    run.write(1, at=0.06)
    run.open_slot(at=0.085)  # due at 0.12 by the last gap; the trainer is early
    slept = len(run.fake.sleeps)

    def early(o: Owner) -> bool:
        if len(run.fake.sleeps) > slept and run.log.now < T0 + run.start + 0.09:
            run.write(2, at=0.09)  # while the reader sleeps after the slot's read
        return len(o.published) == 2

    run.owner.run(until=early)
    assert run.owner.last.update == 2
    assert run.fake.sleeps[slept:] == pytest.approx([POLL_INTERVAL]), "a look every 20 ms"


def test_taking_without_a_slot_ends_a_wait(tmp_path: Path) -> None:
    run = AlignedRun(tmp_path)
    run.write(0, at=0.00)
    run.write(1, at=0.05)
    run.open_slot(at=0.08)

    slept = len(run.fake.sleeps)

    def paused(o: Owner) -> bool:
        if len(run.fake.sleeps) == slept + 1:  # the wait has begun: the user pauses
            run.feed.taken()
        return len(o.published) == 2

    run.owner.run(until=paused)
    assert run.owner.last.update == 1
    assert len(run.fake.sleeps) - slept <= 1, "published at the pause, not when due"


def test_an_unreadable_log_shows_what_waited_before_the_error(tmp_path: Path) -> None:
    run = AlignedRun(tmp_path)
    run.write(0, at=0.00)
    run.write(1, at=0.05)
    run.open_slot(at=0.08)

    def replaced(o: Owner) -> bool:
        if run.path.is_file() and len(run.fake.sleeps) > 0:
            run.path.unlink()
            run.path.mkdir()  # not a regular file: the reader gives up
        return False

    run.owner.run(until=replaced)  # returns by itself, on the error
    assert [severity for _, severity in run.owner.notices] == ["error"]
    assert run.owner.last.update == 1, "the lines that waited are on screen"


@pytest.mark.parametrize(
    ("writes", "slot_at", "slot"),
    [
        ([0.0], 0.08, SLOT),  # one write since the last frame: nothing is due soon
        ([0.0, 0.05], 0.05 + PACE_TOLERANCE / 2, SLOT),  # the last line has just arrived
        ([0.0, 0.05], 0.08, 0.0),  # taken without a slot (paused, the first frame)
    ],
)
def test_lines_are_drawn_at_once_when_waiting_cannot_help(
    tmp_path: Path, writes: list[float], slot_at: float, slot: float
) -> None:
    run = AlignedRun(tmp_path)
    for update, at in enumerate(writes):
        run.write(update, at)
    run.fake.now = run.start + slot_at
    run.feed.taken(slot=slot)
    slept = len(run.fake.sleeps)
    run.owner.run(until=lambda o: len(o.published) == 2)
    assert run.owner.last.update == len(writes) - 1
    assert len(run.fake.sleeps) == slept, "published by the first read, without a look more"


def test_a_quiet_log_is_looked_at_not_read(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", updates=2, finish=None)
    fake = FakeTime()
    feed = feed_for(path, fake)
    reads = 0
    read_new = feed.reader.read_new

    def counted() -> object:
        nonlocal reads
        reads += 1
        return read_new()

    feed.reader.read_new = counted  # type: ignore[method-assign]
    owner = Owner(feed)
    owner.run(until=lambda o: o.loops > 50)
    assert owner.last.update == 1
    assert reads == 2, "one read of the log, one that found nothing; then only a stat"
    with path.open("a") as f:
        f.write("\n")  # a blank line: the file changed
    owner.run(until=lambda o: o.loops > 100)
    assert reads == 4, "it moved the offset without an event: read on until a read finds nothing"


def test_the_line_before_tells_the_pace_of_one_write_read_as_a_slot_opens() -> None:
    """A rollout and its update came in one write; the trainer's last line came 50 ms
    before them: the next is due at 10.10, inside the slot, so they wait for it."""
    stamps = [10.05, 10.0501]
    assert arrival_wait(10.08, stamps, None, SLOT) == 0.0, "one write alone: no pace"
    wait = arrival_wait(10.08, stamps, None, SLOT, before=10.00)
    assert wait == pytest.approx(10.0501 + 0.05 + PACE_TOLERANCE - 10.08)
    assert arrival_wait(10.08, stamps, None, SLOT, before=5.0) == 0.0, "a long pause: none"


def test_looks_come_every_few_milliseconds_when_the_next_line_is_due(tmp_path: Path) -> None:
    run = AlignedRun(tmp_path)
    run.owner.take = True
    run.feed.taken()  # the UI waits: every new line is posted at once

    written = 0

    def paced(o: Owner) -> bool:  # a line every 50 ms, each written once the last is shown
        nonlocal written
        at = 0.05 * written
        if written < 3 and len(o.published) == written + 1 and run.fake.now >= run.start + at:
            run.write(written, at=at)
            written += 1
        return len(o.published) == 4

    run.owner.run(until=paced)
    assert run.owner.last.update == 2
    late = run.fake.now - (run.start + 0.10)
    assert 0 <= late <= HOLD_POLL_INTERVAL + 1e-9, "seen within a short look of arriving"
    assert HOLD_POLL_INTERVAL in [round(s, 6) for s in run.fake.sleeps]
