"""RunsApp: several runs in one dashboard (``sanctum RUN RUN ...``, ``sanctum --all DIR``).

A run table (status, the run's verdict as ``sanctum check`` gives it, progress, steps per
second, the latest update, the last return, the worst KL) over an overlay of one metric of
every run. One thread worker runs :class:`~sanctum.live.board_feed.RunsFeed` over all the logs
and posts a frozen :class:`~sanctum.live.board_feed.Board` per frame; the UI only hands it to
the widgets, so the table, the overlay and an open full view always show the same board.
``enter`` opens the full view of the run under the cursor (the single-run dashboard's
widgets, fed the run's full snapshot from each board; ``c`` charts it and, for a run whose
folder has rollouts.jsonl, ``r`` shows its worst and best rollouts), ``escape`` comes back; ``o``
cycles the overlay metric; ``g`` groups the seeds of one configuration (median and
min..max); with seeds grouped, ``enter`` goes back to the runs with the cursor on the
group's first run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.live.board_feed import OVERLAY_METRICS, Board, RunsFeed
from sanctum.live.pacing import POLL_INTERVAL, REFRESH_SECONDS, TICK_SECONDS
from sanctum.model.board import run_labels
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.tui.base import SanctumAppBase
from sanctum.tui.messages import BoardReady
from sanctum.tui.widgets import (
    HelpScreen,
    SnapshotView,
)
from sanctum.tui.widgets.base import KeyHints
from sanctum.tui.widgets.chart_screen import ChartScreen
from sanctum.tui.widgets.dashboard import dashboard
from sanctum.tui.widgets.help import RUNS_KEYS
from sanctum.tui.widgets.rollouts_screen import ROLLOUTS_BINDINGS, RolloutsKey, RolloutsOpener
from sanctum.tui.widgets.runs import Frame, OverlayChart, RunTable

TABLE_ACTIONS = frozenset({"move", "open", "overlay", "group"})
"""Actions of the run table, off while a full view (or any screen) is over it."""


class RunScreen(RolloutsKey, Screen[None]):
    """The full view of one run: the single-run dashboard's widgets, fed by the app."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Runs", key_display="esc"),
        Binding("c", "chart", "Chart"),
        *ROLLOUTS_BINDINGS,
    ]

    def __init__(self, index: int, path: Path, thresholds: Thresholds) -> None:
        super().__init__(id="run-screen")
        self.index = index
        self.path = path
        self.thresholds = thresholds
        self.shown: SanctumSnapshot | None = None
        self.rollouts = RolloutsOpener(path.parent)

    def compose(self) -> ComposeResult:
        yield from dashboard(self.path, self.thresholds)

    def on_mount(self) -> None:
        self.set_interval(TICK_SECONDS, self.watch_rollouts)

    def covered(self) -> bool:
        """A chart, the rollouts or the help is over this run's dashboard."""
        return self.app.screen is not self

    def action_back(self) -> None:
        """Back to the run table."""
        app = self.app
        assert isinstance(app, RunsApp)
        app.close_run()

    def action_chart(self) -> None:
        """The zoomable chart of any metric of this run."""
        self.app.push_screen(ChartScreen(self.shown))


class RunsApp(SanctumAppBase):
    """Live dashboard of the event logs at ``paths``: a run table and an overlay."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("enter", "open", "Open run"),
        Binding("o", "overlay", "Overlay"),
        Binding("g", "group", "Group seeds"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(
        self,
        paths: Sequence[Path],
        thresholds: Thresholds,
        *,
        now: Callable[[], float] = time.time,
        poll_interval: float = POLL_INTERVAL,
        refresh_seconds: float = REFRESH_SECONDS,
        fail_on: Level = Level.CRITICAL,
    ) -> None:
        super().__init__()
        self.paths = [Path(p) for p in paths]
        self.thresholds = thresholds
        self.feed = RunsFeed(
            self.paths,
            run_labels(self.paths),
            thresholds,
            clock=now,
            poll_interval=poll_interval,
            frame_seconds=refresh_seconds,
            fail_on=fail_on,
        )
        self.grouped = False
        self.cursor = 0
        """Line of the table under the cursor: a run, or with seeds grouped a group."""
        self.board: Board | None = None
        """The newest board; every widget on screen shows it."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The table's keys act only on the table's screen."""
        return action not in TABLE_ACTIONS or len(self.screen_stack) == 1

    def compose(self) -> ComposeResult:
        with Frame(id="runs-frame"):
            yield RunTable(id="run-table")
        with Frame(id="overlay-frame", classes="fill"):
            yield OverlayChart(id="overlay")
        yield KeyHints()

    def on_mount(self) -> None:
        self._table = self.query_one(RunTable)
        self._overlay = self.query_one(OverlayChart)
        self._read()

    @work(thread=True, exclusive=True, name="sanctum-runs-reader", group="reader")
    def _read(self) -> None:
        self.feed.run(self.feed_callbacks(BoardReady))

    def on_board_ready(self, message: BoardReady) -> None:
        self.board = message.board
        if self.is_running:
            self._draw(message.board)
        self.feed.taken()

    def _draw(self, board: Board) -> None:
        """Every widget of every screen open shows ``board``."""
        self.cursor = min(self.cursor, max(0, self._lines(board) - 1))
        self._table.show(board, self.grouped, self.cursor)
        self._overlay.show(board, self.grouped)
        opened = next((s for s in self.screen_stack if isinstance(s, RunScreen)), None)
        if board.snapshot is None or opened is None or opened.index != board.focus:
            return  # no full view open, or a board from before it opened
        opened.shown = board.snapshot
        for screen in self.screen_stack[1:]:  # the full view, and a chart screen over it
            for view in screen.query(SnapshotView):
                view.snapshot = board.snapshot

    def _lines(self, board: Board) -> int:
        return len(board.groups if self.grouped else board.rows)

    def _redraw(self) -> None:
        if self.board is not None:
            self._draw(self.board)

    def action_move(self, step: int) -> None:
        """Move the cursor up or down the table."""
        if self.board is not None:
            self.cursor = max(0, min(self._lines(self.board) - 1, self.cursor + step))
            self._redraw()

    def action_open(self) -> None:
        """Open the run under the cursor; on a group, show its runs."""
        if self.board is None or len(self.screen_stack) > 1:
            return
        if self.grouped:
            self.grouped = False
            self.cursor = self.board.groups[self.cursor].members[0]
            self._redraw()
            return
        self.feed.show_run(self.cursor)
        self.push_screen(RunScreen(self.cursor, self.paths[self.cursor], self.thresholds))

    def close_run(self) -> None:
        """Back from a run's full view to the table."""
        self.feed.show_run(None)
        self.pop_screen()

    def action_overlay(self) -> None:
        """Overlay the next metric."""
        metrics = OVERLAY_METRICS
        current = self.feed.metric
        self.feed.show_metric(metrics[(metrics.index(current) + 1) % len(metrics)])

    def action_group(self) -> None:
        """Group the seeds of one configuration, or show every run again."""
        if self.board is None:
            return
        if self.grouped:
            self.cursor = self.board.groups[self.cursor].members[0]
        else:
            self.cursor = self.board.group_of[self.cursor]
        self.grouped = not self.grouped
        self._redraw()

    def action_help(self) -> None:
        """Open the glossary."""
        self.push_screen(HelpScreen(self.thresholds, RUNS_KEYS))
