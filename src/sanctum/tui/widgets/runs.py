"""The widgets of the run table screen: the table and the overlay, each one widget.

Both draw a :class:`~sanctum.live.board_feed.Board` they are given, with ``render_line`` over
strips cut from the pure text of :mod:`sanctum.text.run_table` and
:mod:`sanctum.charts.overlay`: a widget per cell (or a DataTable) would cost a frame its
per-widget overhead many times over, and the screen is redrawn up to seven times a second.
Each run (or group of seeds) has one colour, the same in the table's swatch and in its
overlay line, so the table is the chart's legend too; the overlay repeats the names
beside the plot.
"""

from __future__ import annotations

from typing import ClassVar, Final

from rich.style import Style
from textual.containers import Vertical
from textual.strip import Strip
from textual.widget import Widget

from sanctum.charts.glyphs import CRITICAL_LINE, WARNING_LINE, KeyedSpans, StyleKey
from sanctum.charts.overlay import OverlayCanvas, Series
from sanctum.charts.scale import rule_lines
from sanctum.formatting import plural, visible
from sanctum.health.contracts import bounds_of
from sanctum.live.board_feed import EPISODE_RETURN, Board
from sanctum.text.panels import kl_decimals
from sanctum.text.run_table import (
    GROUP_COLUMNS,
    RUN_COLUMNS,
    fit_words,
    group_line,
    header,
    layout,
    run_line,
)
from sanctum.tui.widgets.display import LineCache, Spans

PALETTE: Final = (
    "#4e9be6",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#b07aa1",
    "#9c755f",
    "#ff9da7",
    "#76b7b2",
    "#edc948",
    "#bab0ac",
)
"""One colour per run or group (Tableau 10), in table order; more runs reuse them."""
LOG_METRICS: Final = frozenset({"approx_kl", "approx_kl_max", "kl_final", "ref_kl"})
"""Overlays drawn on a log scale: KL spans decades."""
LEGEND_MAX: Final = 24
"""Widest legend beside the overlay."""


def colour_style(index: int) -> Style:
    return Style(color=PALETTE[index % len(PALETTE)])


class Frame(Vertical):
    """The border around a table or a chart, with its titles: drawn again only when a
    title changes, not with every frame of what it holds."""

    DEFAULT_CSS = """
    Frame {
        height: auto;
        border: round $primary;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    Frame.fill { height: 1fr; min-height: 6; }
    """

    def titles(self, title: str, subtitle: str = "") -> None:
        """Set the border's titles (a no-op when they are the same)."""
        if (title, subtitle) != (self.border_title, self.border_subtitle):
            self.border_title, self.border_subtitle = title, subtitle


class _BoardView(Widget):
    """A widget drawn from a board as styled spans; subclasses say what the lines are.

    A new board repaints only the lines whose text or keys changed: most of a frame of
    a table or a chart is the same as the last, and Textual's cost is per line painted.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.board: Board | None = None
        self.grouped = False
        self._picture: LineCache[KeyedSpans] = LineCache(self._styled)

    def on_resize(self) -> None:
        self._picture.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._picture.clear()

    def redraw(self, layout: bool = False) -> None:
        """Show the current board: repaint the lines that changed (all on a new layout)."""
        width, height = self.content_size
        if layout or width <= 0 or height <= 0:
            self._picture.clear()
            self.refresh(layout=layout)
            return
        self._picture.show(self, self.lines(width, height))

    def render_line(self, y: int) -> Strip:
        return self._picture.line(self, y, lambda: self.lines(*self._extent()))

    def _extent(self) -> tuple[int, int]:
        return max(1, self.content_size.width), max(1, self.content_size.height)

    def lines(self, width: int, height: int) -> list[KeyedSpans]:
        raise NotImplementedError

    def text(self) -> list[str]:
        """The lines of the current board at the current size, without their styles."""
        return ["".join(text for text, _ in line) for line in self.lines(*self._extent())]

    def _styled(self, lines: list[KeyedSpans]) -> list[Spans]:
        cache: dict[StyleKey, Style] = {}
        styled: list[Spans] = []
        for line in lines:
            spans: Spans = []
            for text, key in line:
                style = cache.get(key)
                if style is None:
                    style = cache[key] = self._style(key)
                spans.append((text, style))
            styled.append(spans)
        return styled

    def _style(self, key: StyleKey) -> Style:
        if isinstance(key, int):
            return colour_style(key)
        if not key:
            return Style()
        style = self.get_component_rich_style(f"{self.prefix}--{key}")
        return Style(color=style.color, bold=style.bold)  # the colour blended, not the ground

    prefix: ClassVar[str] = ""


class RunTable(_BoardView):
    """A header and one line per run (or group), the cursor's line highlighted; scrolls
    to keep the cursor in view."""

    prefix = "run-table"
    DEFAULT_CSS = """
    RunTable { height: auto; max-height: 55vh; }
    RunTable > .run-table--header { color: $text-muted; text-style: bold; }
    RunTable > .run-table--muted { color: $text-muted; }
    RunTable > .run-table--cursor { background: $primary-muted; }
    RunTable > .run-table--pending { color: $text-muted; }
    RunTable > .run-table--healthy { color: $success; }
    RunTable > .run-table--warning { color: $warning; text-style: bold; }
    RunTable > .run-table--critical { color: $error; text-style: bold; }
    RunTable > .run-table--connection-waiting { color: $text-muted; }
    RunTable > .run-table--connection-live { color: $success; }
    RunTable > .run-table--connection-stale { color: $warning; text-style: bold; }
    RunTable > .run-table--connection-finished { color: $primary; }
    RunTable > .run-table--connection-failed { color: $error; text-style: bold; }
    RunTable > .run-table--connection-interrupted { color: $warning; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "run-table--header",
        "run-table--muted",
        "run-table--cursor",
        "run-table--pending",
        "run-table--healthy",
        "run-table--warning",
        "run-table--critical",
        *(
            f"run-table--connection-{c}"
            for c in ("waiting", "live", "stale", "finished", "failed", "interrupted")
        ),
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cursor = 0
        self._top = 0

    @property
    def count(self) -> int:
        """Lines under the header: runs, or groups."""
        if self.board is None:
            return 0
        return len(self.board.groups if self.grouped else self.board.rows)

    def show(self, board: Board, grouped: bool, cursor: int) -> None:
        """Draw ``board``; the screen is laid out again only when the line count changes."""
        before = self.count
        self.board, self.grouped, self.cursor = board, grouped, cursor
        if isinstance(self.parent, Frame):
            self.parent.titles(*table_titles(board, grouped))
        self.redraw(layout=self.count != before)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return 1 + max(1, self.count)

    def lines(self, width: int, height: int) -> list[KeyedSpans]:
        board = self.board
        if board is None:
            return [[("reading…", "muted")]]
        columns = layout(GROUP_COLUMNS if self.grouped else RUN_COLUMNS, width)
        decimals = kl_decimals(board.thresholds)
        if self.grouped:
            body = [group_line(columns, g, i, decimals) for i, g in enumerate(board.groups)]
        else:
            body = [run_line(columns, row, i, decimals) for i, row in enumerate(board.rows)]
        room = max(1, height - 1)
        self._top = min(
            max(self._top, self.cursor - room + 1), self.cursor, max(0, len(body) - room)
        )
        shown = body[self._top : self._top + room]
        at = self.cursor - self._top
        if 0 <= at < len(shown):
            shown[at] = self._highlight(shown[at], width)
        return [header(columns), *shown]

    def _highlight(self, line: KeyedSpans, width: int) -> KeyedSpans:
        """The cursor's line: every run over the cursor's background, padded to the width."""
        used = sum(len(text) for text, _ in line)
        marked: KeyedSpans = [(text, f"cursor {key}") for text, key in line]
        return [*marked, (" " * max(0, width - used), "cursor ")]

    def _style(self, key: StyleKey) -> Style:
        if isinstance(key, str) and key.startswith("cursor "):
            inner = key[len("cursor ") :]
            base = super()._style(int(inner) if inner.isdigit() else inner)
            cursor = self.get_component_rich_style("run-table--cursor")
            return base + Style(bgcolor=cursor.bgcolor, bold=True)
        return super()._style(key)


class OverlayChart(_BoardView):
    """The overlay metric of every run (or group), a legend of names beside it."""

    prefix = "overlay"
    DEFAULT_CSS = """
    OverlayChart { height: 1fr; }
    OverlayChart > .overlay--axis { color: $text-muted; }
    OverlayChart > .overlay--warning { color: $text-muted; }
    OverlayChart > .overlay--critical { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "overlay--axis",
        "overlay--warning",
        "overlay--critical",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._canvas = OverlayCanvas()
        self._drawing: tuple[str, bool] | None = None
        """The metric and grouping the canvas holds the dots of."""

    def show(self, board: Board, grouped: bool) -> None:
        if (board.metric, grouped) != self._drawing:
            self._canvas.clear()
            self._drawing = (board.metric, grouped)
        self.board, self.grouped = board, grouped
        scale = "log" if board.metric in LOG_METRICS else "linear"
        warning, critical = self._rule_lines(board)
        if warning is not None:
            scale += f" · {WARNING_LINE} warning"
            if critical is not None:
                scale += f" {CRITICAL_LINE} critical"
        if any(line.span > 1 for line in board.lines):  # first: a narrow border cuts the end
            scale = f"{SAMPLED_NOTE} · {scale}"
        if isinstance(self.parent, Frame):
            self.parent.titles(f"{title_of(board.metric)} · every run by update", scale)
        self.redraw()

    def lines(self, width: int, height: int) -> list[KeyedSpans]:
        board = self.board
        if board is None:
            return []
        names = self._legend_names(board)
        legend_width = min(LEGEND_MAX, max(len(n) for n in names) + 4) if names else 0
        if width - legend_width < 30:
            legend_width = 0
        plot = self._canvas.rows(
            self._series(board),
            width - legend_width,
            height,
            log=board.metric in LOG_METRICS,
            lines=self._rule_lines(board),
            bounds=bounds_of(board.metric),
        )
        if not legend_width:
            return plot
        legend = self._legend(names, legend_width, height)
        return [row + legend[i] for i, row in enumerate(plot)]

    def _series(self, board: Board) -> list[Series]:
        colours = board.group_of if self.grouped else range(len(board.rows))
        return [
            Series(line.buckets, colour, line.span)
            for line, colour in zip(board.lines, colours, strict=True)
        ]

    def _rule_lines(self, board: Board) -> tuple[float | None, float | None]:
        if board.metric == EPISODE_RETURN:
            return None, None
        return rule_lines(board.thresholds.rule(board.metric))

    def _legend_names(self, board: Board) -> list[str]:
        if self.grouped:
            return [visible(g.label) for g in board.groups]
        return [visible(row.label) for row in board.rows]

    def _legend(self, names: list[str], width: int, height: int) -> list[KeyedSpans]:
        """One name a row, after its colour; ``+N more`` when they do not all fit."""
        rows: list[KeyedSpans] = []
        fits = height if len(names) <= height else height - 1
        for i, name in enumerate(names[:fits]):
            rows.append([("  ━ ", i), (fit_words(name, width - 4).ljust(width - 4), "")])
        if len(names) > fits:
            rows.append([(f"  +{len(names) - fits} more".ljust(width), "axis")])
        blank: KeyedSpans = [(" " * width, "")]
        return rows + [blank] * (height - len(rows))


def table_titles(board: Board, grouped: bool) -> tuple[str, str]:
    """``Sanctum · 5 runs`` and its subtitle; with seeds grouped, what a group shows."""
    runs = plural(len(board.rows), "run")
    if not grouped:
        return f"Sanctum · {runs}", "enter: a run's dashboard"
    configs = plural(len(board.groups), "config")
    return f"Sanctum · {runs}, {configs}", "seeds of a config: median, min…max"


SAMPLED_NOTE: Final = "whole run, min…max a column"
"""The overlay's note once a run has more updates than it keeps points: each run is drawn
from its first update, a column spanning the values of the updates it covers."""


def title_of(metric: str) -> str:
    """The overlay's title: the metric, or ``episode return``."""
    return "episode return" if metric == EPISODE_RETURN else metric
