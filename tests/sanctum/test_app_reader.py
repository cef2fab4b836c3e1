"""The dashboard's reading loop without Textual: coalescing, waiting, errors, replay pacing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sanctum.reader_worker import (
    UI_WAIT_SECONDS,
    FeedCallbacks,
    ReplayClock,
    Severity,
    SnapshotFeed,
)
from sanctum.snapshot import Connection, SanctumSnapshot
from sanctum.thresholds import DEFAULT_THRESHOLDS
from tests.sanctum.logs import T0, RunLog, write_run


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
