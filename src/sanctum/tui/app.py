"""SanctumApp: the dashboard over one event log, live or replayed.

A thread worker runs :class:`~sanctum.live.snapshot_feed.SnapshotFeed` (read, aggregate,
snapshot) and posts one :class:`~sanctum.tui.messages.SnapshotReady` when the app takes it,
once per frame; the UI thread only hands the frozen snapshot to the widgets. A one-second
tick recomputes the connection state from the snapshot on screen with the injected clock, so
STALE appears even while no event (and so no snapshot) arrives; every widget on screen
always shows the same snapshot (the tick changes only its clock and connection, never its
figures). While the run is STALE the tick also asks the reader for a snapshot judged now: a
silence past the stall limit is a stall, and a run silent that long is judged as ``check``
judges it. ``p`` freezes the display while reading goes on; ``app.snapshot`` is the newest
snapshot taken (while paused, every one is taken; tests and the tail-latency benchmark read
it). The screen itself is redrawn once every ``refresh_seconds`` on average, two frames
in a row at most (``FrameBudget``: a newer snapshot waits for the next slot, 0.15 s by
default), and a frame is drawn as a line arrives where the trainer allows it
(``SnapshotFeed.taken``): a trainer that updates twenty times a second gets about seven
frames, not twenty. The widgets keep a frame cheap: the big ones draw strips of
styled spans (no Rich layout), and a label lays the screen out again only when its text
outgrows it.

Given a :class:`~sanctum.live.trainer_process.TrainerProcess` (``ppo train`` runs its trainer in a
child process and this app in the parent), the app also watches the child: a child that
dies shows TRAINER DOWN with its exit code and last stderr lines, and quitting while it
trains asks whether to stop it, detach from it or cancel. The log is read exactly as for
``sanctum RUN``; only what the log cannot know comes from the process.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.live.pacing import (
    REFRESH_SECONDS,
    TICK_SECONDS,
    FrameBudget,
)
from sanctum.live.snapshot_feed import FeedOptions, SnapshotFeed
from sanctum.live.trainer_process import STOP_TIMEOUT, TrainerExit, TrainerProcess
from sanctum.model.snapshot import Connection, SanctumSnapshot, TimelineEntry, connection_of
from sanctum.tui.base import SanctumAppBase
from sanctum.tui.messages import SnapshotReady
from sanctum.tui.widgets import (
    HelpScreen,
    SnapshotView,
    StatusBanner,
)
from sanctum.tui.widgets.chart_screen import ChartScreen
from sanctum.tui.widgets.dashboard import dashboard
from sanctum.tui.widgets.quit_dialog import QuitChoice, QuitDialog
from sanctum.tui.widgets.rollouts_screen import ROLLOUTS_BINDINGS, RolloutsKey, RolloutsOpener

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; only read by the type checker

TRAINER_POLL_SECONDS = 0.2
"""How often the app checks whether its trainer process is still alive."""


class SanctumApp(RolloutsKey, SanctumAppBase):
    """Live (or replayed) PPO health dashboard for the event log at ``path``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("c", "chart", "Chart"),
        *ROLLOUTS_BINDINGS,
    ]

    def __init__(
        self,
        path: Path,
        thresholds: Thresholds,
        replay_speed: float | None = None,
        *,
        trainer: TrainerProcess | None = None,
        stop_timeout: float = STOP_TIMEOUT,
        refresh_seconds: float = REFRESH_SECONDS,
        **feed: Unpack[FeedOptions],
    ) -> None:
        """``feed``: how the reading thread reads (its clock, poll interval, ``fail_on``),
        passed to :class:`SnapshotFeed` as they are."""
        super().__init__()
        self.refresh_seconds = refresh_seconds
        self._budget = FrameBudget(refresh_seconds)
        self._redraw: Timer | None = None
        """The timer of the next redraw slot; None while a snapshot may be drawn at once."""
        self.frames = 0
        """Snapshots drawn so far (a redraw of the same snapshot after the tick excluded)."""
        self.trainer = trainer
        """The trainer process this dashboard runs (``ppo train``); None for ``sanctum``."""
        self._said: str | None = None
        """The trainer's last line shown while the log is awaited (``_waiting_entries``)."""
        self.stop_timeout = stop_timeout
        self.choice: QuitChoice | None = None
        """What the user chose in the quit dialog (None: quit without being asked)."""
        self.trainer_exit: TrainerExit | None = None
        """How the trainer process ended, once it has."""
        self.path = Path(path)
        self.thresholds = thresholds
        self.replay_speed = replay_speed
        self.feed = SnapshotFeed(self.path, thresholds, replay_speed=replay_speed, **feed)
        self.paused = False
        self._snapshot: SanctumSnapshot | None = None
        self._shown: SanctumSnapshot | None = None
        """The snapshot every widget on screen shows."""
        self._drawn: SanctumSnapshot | None = None
        """The snapshot ``_shown`` was made from (the same, unless the trainer is down)."""
        self.rollouts = RolloutsOpener(self.path.parent)

    @property
    def snapshot(self) -> SanctumSnapshot | None:
        """The newest snapshot (None until the reader published its first)."""
        return self._snapshot

    @property
    def shown(self) -> SanctumSnapshot | None:
        """The snapshot every widget on screen shows (None before the first)."""
        return self._shown

    def covered(self) -> bool:
        """A chart, a dialog or the help is over the dashboard."""
        return len(self.screen_stack) > 1

    def compose(self) -> ComposeResult:
        yield from dashboard(self.path, self.thresholds, self.replay_speed)

    def on_mount(self) -> None:
        self.set_interval(TICK_SECONDS, self._tick)
        if self.trainer is not None:
            self.set_interval(TRAINER_POLL_SECONDS, self._watch_trainer)
        self._read()

    def on_unmount(self) -> None:
        self.feed.wake()  # the reader sleeps while a frame is drawn: let it see the end

    @work(thread=True, exclusive=True, name="sanctum-reader", group="reader")
    def _read(self) -> None:
        self.feed.run(self.feed_callbacks(SnapshotReady))

    @property
    def display_pending(self) -> bool:
        """The reader holds events the screen does not show yet (they wait for the next
        redraw slot, when the app takes the reader's next snapshot)."""
        return self.feed.pending or (self._snapshot is not self._drawn and not self.paused)

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        """Draw a snapshot when its slot is open; the next is taken when the next opens.

        The reader posts a snapshot only once the previous was taken, so taking one only
        when the screen can draw it means a snapshot is built per frame, not per batch.
        While paused every snapshot is taken at once (``snapshot`` stays current)."""
        self._snapshot = message.snapshot
        if self.paused or not self.is_running:
            self.feed.taken()
        elif self._redraw is None:
            self._show(message.snapshot)

    def _slot_open(self) -> None:
        """The redraw slot opened: draw a snapshot still waiting, else ask for the next."""
        self._redraw = None
        if not self.is_running:
            return
        if not self.paused and self._snapshot is not None and self._snapshot is not self._drawn:
            self._show(self._snapshot)
        else:
            self.feed.taken(slot=0.0 if self.paused else self.refresh_seconds)

    def reader_stopped(self, text: str) -> None:
        """The banner says why the reader stopped until the user quits."""
        self.query_one(StatusBanner).problem = text

    def _tick(self) -> None:
        """Re-judge the connection (LIVE -> STALE) at the current time, for ``snapshot``
        and for the snapshot on screen."""
        self.watch_rollouts()
        snapshot = self._snapshot
        if snapshot is None or not self.is_running:  # timers may fire while closing
            return
        now = self.feed.now()
        stale_seconds = snapshot.thresholds.stale_seconds
        self._snapshot = dataclasses.replace(
            snapshot, now=now, connection=connection_of(snapshot.run, now, stale_seconds)
        )
        if snapshot is self._drawn:  # the same figures: not a snapshot to draw again
            self._drawn = self._snapshot
        if self._snapshot.connection is Connection.STALE:  # silent: is it a stall yet?
            self.feed.rejudge()
        shown = self._shown
        if not self.paused and shown is not None:  # the screen's snapshot, not a newer one
            connection = connection_of(shown.run, now, stale_seconds)
            self.query_one(StatusBanner).snapshot = dataclasses.replace(
                shown, now=now, connection=connection
            )

    def _show(self, snapshot: SanctumSnapshot) -> None:
        self.frames += 1
        self._drawn = snapshot
        if self._redraw is None:
            wait = self._budget.spend(time.monotonic())
            if wait > 0:
                self._redraw = self.set_timer(wait, self._slot_open)
            elif not self.paused:  # the next frame may follow at once: with the next line
                self.feed.taken(slot=self.refresh_seconds)
        if self.trainer_exit is not None and self.trainer_exit.down:
            snapshot = dataclasses.replace(
                snapshot, timeline=snapshot.timeline + self._down_entries()
            )
        elif snapshot.connection is Connection.WAITING:
            snapshot = dataclasses.replace(
                snapshot, timeline=snapshot.timeline + self._waiting_entries()
            )
        self._shown = snapshot
        for screen in self.screen_stack:  # the dashboard, and a chart or rollouts screen
            for view in screen.query(SnapshotView):
                view.snapshot = snapshot

    def action_toggle_pause(self) -> None:
        """Freeze or unfreeze the display; reading and aggregation continue."""
        self.paused = not self.paused
        self.query_one(StatusBanner).paused = self.paused
        self.feed.taken()  # paused: every snapshot is taken, so ``snapshot`` stays current
        if not self.paused and self._snapshot is not None:
            self._show(self._snapshot)

    def action_help(self) -> None:
        """Open the glossary."""
        self.push_screen(HelpScreen(self.thresholds))

    def action_chart(self) -> None:
        """Open the zoomable chart of any metric over the dashboard, with its snapshot."""
        if len(self.screen_stack) == 1:  # from the dashboard, not over a dialog
            self.push_screen(ChartScreen(self._shown))

    # ------------------------------------------------------ own trainer process
    def _watch_trainer(self) -> None:
        """Notice the trainer's exit; a death it was not asked for is TRAINER DOWN."""
        if self.trainer is None or self.trainer_exit is not None or not self.is_running:
            return
        ended = self.trainer.poll()
        if ended is None:
            shown, latest = self._shown, self._snapshot
            waiting = shown is not None and shown.connection is Connection.WAITING
            if waiting and latest is not None and self.trainer.last_said() != self._said:
                self._show(latest)  # the trainer said something new
            return
        self.trainer_exit = ended
        if isinstance(self.screen, QuitDialog):  # nothing left to stop or detach from
            self.screen.dismiss("cancel")
            self.notify("The trainer has exited: q quits.")
        if ended.down:
            self.query_one(StatusBanner).trainer_down = ended
            if self._snapshot is not None:
                self._show(self._snapshot)

    def _waiting_entries(self) -> tuple[TimelineEntry, ...]:
        """Before the log exists: which file is awaited, in full (the banner cuts it), and,
        under ``ppo train``, the trainer's last line (``warm start: 550 supervised steps``:
        a token-level run warms up for minutes before it records)."""
        entries = [TimelineEntry("waiting", Level.PENDING, f"for {self.path}")]
        said = None if self.trainer is None else self.trainer.last_said()
        if said is not None:
            entries.append(TimelineEntry("trainer", Level.PENDING, said))
        self._said = said
        return tuple(entries)

    def _down_entries(self) -> tuple[TimelineEntry, ...]:
        """The dead trainer's exit code and stderr tail, as critical event-log lines."""
        assert self.trainer is not None and self.trainer_exit is not None
        ended = self.trainer_exit
        head = (
            f"trainer process ended ({ended.describe()}); last lines of {self.trainer.stderr_path}:"
        )
        lines = ended.stderr_tail or ("(nothing on stderr)",)
        return tuple(TimelineEntry("trainer", Level.CRITICAL, text) for text in (head, *lines))

    def _trainer_running(self) -> bool:
        """The child still trains and the log has not recorded the end of the run."""
        if self.trainer is None or self.trainer.poll() is not None:
            return False
        status = self._snapshot.run.status if self._snapshot is not None else None
        return status in (None, "running")

    async def action_quit(self) -> None:
        """Quit; while our own trainer runs, first ask: stop it, detach, or cancel."""
        if not self._trainer_running():
            self.exit()
        elif self.query_one(StatusBanner).stopping:
            self.notify("Stopping the trainer: waiting for its checkpoint…")
        elif not isinstance(self.screen, QuitDialog):
            self.push_screen(QuitDialog(str(self.path.parent)), self._quit_chosen)

    def _quit_chosen(self, choice: QuitChoice | None) -> None:
        if choice == "stop":
            self.choice = "stop"
            self.query_one(StatusBanner).stopping = True
            self._stop_trainer()
        elif choice == "detach":
            self.choice = "detach"
            if self.trainer is not None:
                self.trainer.detach()
            self.exit()

    @work(thread=True, exclusive=True, name="sanctum-stop", group="trainer")
    def _stop_trainer(self) -> None:
        """SIGINT the trainer and wait for it off the UI thread, then quit."""
        assert self.trainer is not None
        ended = self.trainer.stop(self.stop_timeout)
        self.call_from_thread(self._stopped, ended)

    def _stopped(self, ended: TrainerExit) -> None:
        self.trainer_exit = ended
        self.exit()
