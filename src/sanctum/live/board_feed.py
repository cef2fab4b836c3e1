"""The reading loop behind the run table: every run's log folded, one frozen board a frame.

One thread follows all the runs (a reader and an aggregator each: the same fold as the
single-run dashboard, ``check`` and ``summary``) and hands the UI a :class:`Board`: a row
per run, the groups of seeds, the chosen metric of every run for the overlay, and the
full :class:`~sanctum.model.snapshot.SanctumSnapshot` of the one run whose full view is open.
A full snapshot costs about a millisecond per run, so the table is built from each
aggregator's run facts and health alone, and only the focused run gets one.

Cost is bounded by frames, not by events: while logs grow, the runs are read once per
frame (``frame_seconds``) and a board is posted only when the UI took the previous one,
so ten runs writing twenty updates a second each make about six boards a second, each holding
everything read until then. While the logs are quiet they are polled every
``poll_interval``, and the first new line is posted at once. With nothing new, a board is
still posted every ``tick_seconds``, so a silent run turns STALE on screen.
There is no Textual here: the loop is driven with plain callables.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.live.file_watch import FileWatch
from sanctum.live.pacing import (
    POLL_INTERVAL,
    REFRESH_SECONDS,
    TICK_SECONDS,
    FeedCallbacks,
    Handshake,
    Severity,
)
from sanctum.metrics import KL_METRIC
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.board import GroupRow, RunRow, group_key, group_rows, run_row, worst_kl
from sanctum.model.downsample import Bucket, DownsampledHistory
from sanctum.model.snapshot import SanctumSnapshot
from telemetry.eventlog import EventLogError, EventLogNotFound, open_reader
from telemetry.events import Event, PPOUpdate, Rollout

EPISODE_RETURN: Final = "episode_return"
"""The overlay of the mean return of each rollout that finished an episode."""
OVERLAY_METRICS: Final = (
    KL_METRIC,
    EPISODE_RETURN,
    "clip_fraction",
    "entropy",
    "explained_variance",
    "value_loss",
    "grad_norm",
)
"""What ``o`` cycles through, in this order."""


@dataclass(frozen=True, slots=True)
class OverlayLine:
    """One run's whole history of the overlay metric, down-sampled, oldest first."""

    buckets: tuple[Bucket, ...] = ()
    span: int = 1
    """Updates each full bucket covers (1: every update is a point of its own)."""


@dataclass(frozen=True, slots=True)
class Board:
    """Everything the run table, the overlay and the full view show, at time ``now``."""

    generation: int
    now: float
    rows: tuple[RunRow, ...]
    groups: tuple[GroupRow, ...]
    group_of: tuple[int, ...]
    """Each run's index in ``groups``."""
    metric: str
    """The overlay metric."""
    lines: tuple[OverlayLine, ...]
    """The overlay metric of each run, in table order."""
    focus: int | None
    """The run whose full view is open."""
    snapshot: SanctumSnapshot | None
    """The full snapshot of ``focus``."""
    thresholds: Thresholds


class RunFollower:
    """One run: its reader, its aggregator, and its episode returns by update."""

    def __init__(
        self, path: Path, label: str, thresholds: Thresholds, fail_on: Level = Level.CRITICAL
    ) -> None:
        self.path = path
        self.label = label
        self.reader = open_reader(path)
        self._watch = FileWatch(path)
        self.aggregator = SanctumAggregator(thresholds, fail_on=fail_on)
        self._fail_on = fail_on
        self.problem: str | None = None
        """Why the log cannot be followed (it is no longer read)."""
        self.after: Callable[[Event], None] | None = None
        """Called with each event once folded (the alert watcher's look)."""
        self._histories: dict[str, DownsampledHistory] = {}
        """Each overlay metric's whole history, folded from every batch read."""
        self._fed: tuple[object, str | None] = (None, None)
        """The aggregator's run state and run id the histories were fed from."""
        self._group: tuple[object, str | None] = (None, None)
        """The config the group key was computed for, and the key."""

    def read(self) -> tuple[bool, list[tuple[str, Severity]]]:
        """Fold what was appended: (anything changed, notices for a human)."""
        if self.problem is not None:
            return False, []
        read, seen = self._watch.before_read()
        if not read:
            return False, []
        offset = self.reader.offset
        try:
            batch = self.reader.read_new()
        except EventLogNotFound:
            self._watch.after_read(seen, found=False)
            return False, []
        except EventLogError as exc:  # unreadable, or a newer schema: nothing to follow
            self.problem = str(exc)
            return True, [(self.problem, "error")]
        self._watch.after_read(seen, found=bool(batch) or self.reader.offset != offset)
        if not batch:
            return False, []
        try:
            self.aggregator.handle_batch(batch, self.after)
        except Exception as exc:  # noqa: BLE001 - a bug folding one log costs its row only
            self.problem = f"cannot fold this log: {type(exc).__name__}: {exc}"
            self.aggregator = SanctumAggregator(self.aggregator.thresholds, fail_on=self._fail_on)
            return True, [(f"{self.label}: {self.problem}", "error")]
        self._feed(batch.events)
        return True, [] if batch.reset is None else [(f"{self.label}: {batch.reset}", "warning")]

    def _feed(self, events: Iterable[Event]) -> None:
        """Fold the run's updates and rollouts of a batch the aggregator folded into the
        overlay histories (started afresh when the aggregator started a new run)."""
        run = self.aggregator.run
        if self._fed[0] is not run or self._fed[1] != run.run_id:
            self._fed = (run, run.run_id)
            self._histories = {m: DownsampledHistory() for m in OVERLAY_METRICS}
        histories = self._histories
        returns = histories[EPISODE_RETURN]
        metrics = [(m, h) for m, h in histories.items() if m != EPISODE_RETURN]
        for event in events:
            if event.run_id != run.run_id:  # another run's: not this one's line
                continue
            match event:
                case PPOUpdate(payload=p):
                    for metric, history in metrics:
                        history.add(p.update, getattr(p, metric))
                case Rollout(payload=p) if p.episode_return_mean is not None:
                    returns.add(p.update, p.episode_return_mean)

    def row(self, now: float) -> RunRow:
        """The run's row at time ``now``."""
        agg = self.aggregator
        judge = agg.judge
        stats = judge.stats[KL_METRIC]
        kl = worst_kl(judge.rules.get(KL_METRIC), stats.maximum, stats.nonfinite)
        latest = agg.tamiyo.latest
        update = None if latest is None else latest.update
        run = agg.run.snapshot()
        if self._group[0] is not run.config:  # a run's config is written once: key it once
            self._group = (run.config, group_key(run.env_id, run.config))
        return run_row(
            self.label,
            run,
            agg.run_verdict(now),
            update,
            kl,
            now,
            agg.thresholds,
            self.problem,
            group=self._group[1],
        )

    def line(self, metric: str) -> OverlayLine:
        """The run's whole history of ``metric`` (an overlay metric), down-sampled."""
        history = self._histories.get(metric)
        if history is None:
            return OverlayLine()
        return OverlayLine(history.frozen(), history.span)


class RunsFeed(Handshake):
    """Follows the event logs at ``paths`` (named ``labels``) into boards."""

    def __init__(
        self,
        paths: Sequence[Path],
        labels: Sequence[str],
        thresholds: Thresholds,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float = POLL_INTERVAL,
        frame_seconds: float = REFRESH_SECONDS,
        tick_seconds: float = TICK_SECONDS,
        fail_on: Level = Level.CRITICAL,
    ) -> None:
        super().__init__()
        self.followers = [
            RunFollower(path, label, thresholds, fail_on)
            for path, label in zip(paths, labels, strict=True)
        ]
        self.thresholds = thresholds
        self.poll_interval = poll_interval
        self.frame_seconds = frame_seconds
        self.tick_seconds = tick_seconds
        self._clock = clock
        self.metric = OVERLAY_METRICS[0]
        """The overlay metric (the UI sets it through :meth:`show_metric`)."""
        self.focus: int | None = None
        """The run whose full snapshot each board holds (set through :meth:`show_run`)."""
        self._generation = itertools.count(1)
        self._wanted = True  # the first board is owed at once
        self._dirty = False

    def taken(self) -> None:
        """The UI drew the last board: the next one may be posted (at the next look, so
        that a frame's reads are not split by the UI finishing the previous one)."""
        self._ui_free.set()

    def show_metric(self, metric: str) -> None:
        """Overlay ``metric`` from the next board on, which is posted at once."""
        self.metric = metric
        self._want()

    def show_run(self, index: int | None) -> None:
        """Hold the full snapshot of run ``index`` (None: of none) from the next board on."""
        self.focus = index
        self._want()

    def _want(self) -> None:
        self._wanted = True
        self._wake.set()

    def run(self, callbacks: FeedCallbacks[Board]) -> None:
        """Read and post boards until ``callbacks.stopped()``."""
        next_frame = last_board = -float("inf")
        while not callbacks.stopped():
            changed = self._read_all(callbacks)
            self._dirty = self._dirty or changed
            now = time.monotonic()
            wanted = self._dirty or self._wanted or now >= last_board + self.tick_seconds
            if wanted and now >= next_frame and self._ui_free.is_set():
                self._ui_free.clear()
                self._dirty = self._wanted = False
                callbacks.publish(self.board())
                last_board, next_frame = now, now + self.frame_seconds
            busy = changed or self._dirty  # read again just before the next frame
            self._nap(max(self.poll_interval, next_frame - now) if busy else self.poll_interval)

    def _read_all(self, callbacks: FeedCallbacks[Board]) -> bool:
        changed = False
        for follower in self.followers:
            news, notices = follower.read()
            changed = changed or news
            for text, severity in notices:
                callbacks.notice(text, severity)
        return changed

    def board(self) -> Board:
        """The board now (called by the reading thread, which owns the aggregators)."""
        now = self._clock()
        rows = tuple(f.row(now) for f in self.followers)
        groups, group_of = group_rows(rows)
        metric, focus = self.metric, self.focus
        if focus is not None and not 0 <= focus < len(self.followers):
            focus = None
        snapshot = None if focus is None else self.followers[focus].aggregator.snapshot(now)
        return Board(
            generation=next(self._generation),
            now=now,
            rows=rows,
            groups=groups,
            group_of=group_of,
            metric=metric,
            lines=tuple(f.line(metric) for f in self.followers),
            focus=focus,
            snapshot=snapshot,
            thresholds=self.thresholds,
        )
