"""SanctumApp: the dashboard over one event log, live or replayed.

A thread worker runs :class:`~sanctum.reader_worker.SnapshotFeed` (read, aggregate,
snapshot) and posts one :class:`SnapshotReady` per batch; the UI thread only hands the
frozen snapshot to the widgets. A one-second tick recomputes the connection state from
the latest snapshot with the injected clock, so STALE appears even while no event (and
so no snapshot) arrives. ``p`` freezes the display while reading goes on; ``app.snapshot``
is always the newest snapshot, paused or not (tests and the tail-latency benchmark read it).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Footer
from textual.worker import get_current_worker

from sanctum.reader_worker import POLL_INTERVAL, FeedCallbacks, Severity, SnapshotFeed
from sanctum.state import SanctumSnapshot, connection_of
from sanctum.thresholds import Thresholds
from sanctum.widgets import (
    EpisodeReturnPanel,
    EventLogPanel,
    HealthStatusPanel,
    HelpScreen,
    KLChart,
    SnapshotView,
    StatusBanner,
)

TICK_SECONDS = 1.0
"""How often the connection state is recomputed without new events."""


class SnapshotReady(Message):
    """The reader folded a batch of events; here is the frozen result."""

    def __init__(self, snapshot: SanctumSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class ReaderNotice(Message):
    """Something the user should know about the file itself (reset, unusable)."""

    def __init__(self, text: str, severity: Severity) -> None:
        super().__init__()
        self.text = text
        self.severity = severity


class SanctumApp(App[None]):
    """Live (or replayed) PPO health dashboard for the event log at ``path``."""

    CSS_PATH = "sanctum.tcss"
    TITLE = "Sanctum"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(
        self,
        path: Path,
        thresholds: Thresholds,
        replay_speed: float | None = None,
        *,
        now: Callable[[], float] = time.time,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.thresholds = thresholds
        self.replay_speed = replay_speed
        self.feed = SnapshotFeed(
            self.path, thresholds, replay_speed=replay_speed, clock=now, poll_interval=poll_interval
        )
        self.paused = False
        self.notices: list[tuple[str, Severity]] = []
        """Every reader notice so far, oldest first."""
        self._snapshot: SanctumSnapshot | None = None

    @property
    def snapshot(self) -> SanctumSnapshot | None:
        """The newest snapshot (None until the reader published its first)."""
        return self._snapshot

    def compose(self) -> ComposeResult:
        yield StatusBanner(self.path, self.replay_speed, id="banner")
        with Horizontal(id="middle"):
            yield HealthStatusPanel(self.thresholds, id="health")
            with Vertical(id="side"):
                yield KLChart(id="kl-chart")
                yield EpisodeReturnPanel(id="returns")
        yield EventLogPanel(id="events")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(TICK_SECONDS, self._tick)
        self._read()

    @work(thread=True, exclusive=True, name="sanctum-reader", group="reader")
    def _read(self) -> None:
        worker = get_current_worker()

        def publish(snapshot: SanctumSnapshot) -> None:
            self.post_message(SnapshotReady(snapshot))

        def notice(text: str, severity: Severity) -> None:
            self.post_message(ReaderNotice(text, severity))

        self.feed.run(FeedCallbacks(publish, notice, stopped=lambda: worker.is_cancelled))

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self._snapshot = message.snapshot
        self.feed.taken()
        if not self.paused:
            self._show(message.snapshot)

    def on_reader_notice(self, message: ReaderNotice) -> None:
        self.notices.append((message.text, message.severity))
        self.notify(message.text, severity=message.severity, timeout=10)
        if message.severity == "error":  # the reader stopped: say so until the user quits
            self.query_one(StatusBanner).problem = message.text

    def _tick(self) -> None:
        """Re-judge the connection (LIVE -> STALE) at the current time."""
        snapshot = self._snapshot
        if snapshot is None:
            return
        now = self.feed.now()
        stale_seconds = snapshot.thresholds.stale_seconds
        self._snapshot = dataclasses.replace(
            snapshot, now=now, connection=connection_of(snapshot.run, now, stale_seconds)
        )
        if not self.paused:
            self.query_one(StatusBanner).snapshot = self._snapshot

    def _show(self, snapshot: SanctumSnapshot) -> None:
        for view in self.query(SnapshotView):
            view.snapshot = snapshot

    def action_toggle_pause(self) -> None:
        """Freeze or unfreeze the display; reading and aggregation continue."""
        self.paused = not self.paused
        self.query_one(StatusBanner).paused = self.paused
        if not self.paused and self._snapshot is not None:
            self._show(self._snapshot)

    def action_help(self) -> None:
        """Open the glossary."""
        self.push_screen(HelpScreen(self.thresholds))
