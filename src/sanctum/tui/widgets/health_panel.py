"""HealthStatusPanel: one row per metric, coloured by the level the rule table gave it.

Rows: every metric with a rule (in rule order; a rule for a metric only some runs have,
such as the reference KL, only in runs that measure it), then the other PPO statistics
worth a glance, then any further metric that went non-finite (the verdict may name it, so
it must be on screen). Each row shows the latest value, a sparkline of the last 10 updates
and a trend arrow; the stylesheet's ``metric-table--*`` classes give each level its colour.
A metric not measured by the trainer reads "not measured"; before the first update every
row reads "pending", never a healthy zero. A panel too short for every row and every fact
line under the table (80x24) gives way: the context rows no rule judges are hidden, from
the bottom, unless at warning or worse, and a line says how many; the facts stay. A panel
too narrow for every column (the stylesheet narrows it below 100 columns, so the KL chart
beside it keeps a usable width) drops the "last 10" column: the sparkline gives way (the
arrow keeps the trend, ``c`` charts every metric), and the rules' notes it carried
(``warm-up``, ``crit 1/2``) become fact lines.

The table is one widget that renders all its rows at once: a widget (and a style lookup)
per cell cost the dashboard most of a frame, and it redraws up to seven times a second.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace
from typing import ClassVar

from rich.style import Style
from textual.app import ComposeResult
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.panels import (
    FACT_LABEL,
    NAME_CELLS,
    VALUE_CELLS,
    MetricRow,
    facts_lines,
    fired_text,
    metric_row,
    panel_metrics,
    pending_row,
)
from sanctum.tui.widgets.base import SnapshotView, plain
from sanctum.tui.widgets.display import ComponentStyles, LineCache, Spans, set_text

COLUMNS = (("metric", NAME_CELLS), ("value", VALUE_CELLS), ("last 10", 11), ("", 2))
"""Header and width of each column; the value is right-aligned with one blank after it."""
FULL_WIDTH = sum(width for _, width in COLUMNS) + 1
"""Cells a row takes with every column; a narrower table drops the "last 10" column."""


class MetricTable(Widget):
    """Header and one line per shown row, styled by level from the stylesheet."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-table--header",
        "metric-table--pending",
        "metric-table--healthy",
        "metric-table--warning",
        "metric-table--critical",
        "metric-table--warning-row",
        "metric-table--critical-row",
    }

    def __init__(self, rows: tuple[MetricRow, ...], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows = rows
        self.header = True
        """Whether the column titles are shown (they give way in a panel too short)."""
        self._picture = LineCache.of_spans()
        self._component = ComponentStyles(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._component.clear()
        self._picture.clear()

    def set_rows(self, rows: tuple[MetricRow, ...], header: bool = True) -> None:
        """Show ``rows`` (under the column titles, with ``header``): only the lines that
        changed are drawn again; the screen is laid out again only when the line count
        changes."""
        shown = sum(r.display for r in self.rows) + self.header
        self.rows, self.header = rows, header
        if sum(r.display for r in rows) + header != shown or self._picture.lines is None:
            self._picture.clear()
            self.refresh(layout=True)
        else:
            self._picture.show(self, self._lines())

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return self.header + sum(r.display for r in self.rows)

    def on_resize(self) -> None:
        self._picture.clear()

    @property
    def compact(self) -> bool:
        """Whether the table is too narrow for the "last 10" column (once laid out)."""
        return 0 < self.content_size.width < FULL_WIDTH

    def render_line(self, y: int) -> Strip:
        return self._picture.line(self, y, self._lines)

    def _lines(self) -> list[Spans]:
        lines = [self._line(row) for row in self.rows if row.display]
        return [self._header(), *lines] if self.header else lines

    def _header(self) -> Spans:
        """Column titles, underlined (the words only), aligned like the values."""
        underline = self._style("header")
        header: Spans = []
        titles = [title for title, _ in COLUMNS]
        cells = self._cells(*titles)
        if self.compact:
            del titles[2]  # the "last 10" column gave way
        for title, cell in zip(titles, cells, strict=True):
            start = cell.index(title) if title else 0
            header += [(cell[:start], ""), (title, underline), (cell[start + len(title) :], "")]
        return header

    def _cells(self, name: str, value: str, note: str, arrow: str) -> list[str]:
        (_, w0), (_, w1), (_, w2), (_, w3) = COLUMNS
        if self.compact:  # a blank after the name: a pending row's note fills its cell
            return [f"{name:<{w0}.{w0}} ", f"{value:>{w1}.{w1}} ", f"{arrow:<{w3}}"]
        return [f"{name:<{w0}.{w0}}", f"{value:>{w1}.{w1}} ", f"{note:<{w2}}", f"{arrow:<{w3}}"]

    def _line(self, row: MetricRow) -> Spans:
        value = row.narrow_value if self.compact else row.value
        name, *rest = self._cells(row.label, value, row.note, row.arrow)
        tail = "".join(rest)
        if row.level is Level.PENDING:
            return [(name + tail, self._style("pending"))]
        colour = self._style(row.level.value)
        if row.level not in (Level.WARNING, Level.CRITICAL):
            return [(name, ""), (tail, colour)]
        background = self._style(f"{row.level.value}-row")  # spans the panel
        bold = Style(bold=row.level is Level.CRITICAL)
        pad = " " * max(0, self.content_size.width - len(name + tail))
        return [(name, background + bold), (tail, background + colour), (pad, background)]

    def _style(self, name: str) -> Style:
        """The stylesheet's ``metric-table--<name>``: its background for a ``-row`` class,
        else its text colour and weight (so a row's background shows under its text)."""
        style = self._component(f"metric-table--{name}")
        if name.endswith("-row"):
            return Style(bgcolor=style.bgcolor)
        return Style(color=style.color, bold=style.bold, underline=style.underline)


GLUE = re.compile(r"(?<=\S) (?=[-+]?\d)")
"""A space between a word and the figure after it (``max_kl 0.5``, ``KL 8x``): no break."""


def wrapped(facts: list[str], width: int) -> list[str]:
    """Each fact line cut at spaces into lines of ``width`` cells, the rest indented under
    its figures (``trust region  12% of`` / ``max_kl 0.5`` under ``12%``), never cut and
    never a figure apart from the word it belongs to."""
    indent = " " * FACT_LABEL if width > FACT_LABEL + 8 else ""  # too narrow: no indent
    return [
        part.replace("\u00a0", " ")
        for line in facts
        for part in textwrap.wrap(
            GLUE.sub("\u00a0", line), width, subsequent_indent=indent, break_on_hyphens=False
        )
        or [""]
    ]


class HealthStatusPanel(SnapshotView):
    """The metric table, and the facts under it."""

    def __init__(self, thresholds: Thresholds, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.metrics = panel_metrics(thresholds)

    def compose(self) -> ComposeResult:
        yield MetricTable(tuple(pending_row(m) for m in self.metrics), id="health-table")
        yield Static(id="health-facts")

    def on_mount(self) -> None:
        self.border_title = "Health"

    def show(self, snapshot: SanctumSnapshot) -> None:
        fired = [
            m for m in snapshot.health.fired if m not in self.metrics and m in snapshot.metrics
        ]  # run-wide checks (bug, stall) are not metrics: the banner and the log show them
        if fired:  # a metric outside the table went bad: it gets a row from now on
            self.metrics = self.metrics + tuple(fired)
        rows = tuple(metric_row(snapshot, m) for m in self.metrics)
        table = self.query_one(MetricTable)
        every_rule = fired_text(snapshot)
        facts = facts_lines(snapshot, short_notes=table.compact)
        if every_rule is not None:  # the banner names the first rule; here every one
            facts.insert(0, every_rule)
        facts = wrapped(facts, max(1, self.content_size.width))
        rows, hidden = self._give_way(rows, facts, snapshot.thresholds.metrics)
        if hidden:
            facts.append(f"+{hidden} more: c charts every metric")
        over = self._over(rows, facts)  # still too short: the margin, then the titles go
        facts_view = self.query_one("#health-facts", Static)
        facts_view.set_class(over > 0, "-tight")
        table.set_rows(rows, header=over < 2)
        set_text(facts_view, plain("\n".join(facts)))

    def on_resize(self) -> None:
        if self.snapshot is not None:
            self.show(self.snapshot)

    def _give_way(
        self, rows: tuple[MetricRow, ...], facts: list[str], ruled: tuple[str, ...]
    ) -> tuple[tuple[MetricRow, ...], int]:
        """The rows that leave room for every fact line (why a rule does not judge, drift,
        trust region, stops, anomalies) in a short panel (80x24): the context rows no rule
        judges go first, from the bottom, unless at warning or worse; ruled rows stay. Returns
        the rows (hidden ones not displayed) and how many were hidden."""
        height, width = self.content_size.height, max(1, self.content_size.width)
        if height <= 0:  # not laid out yet
            return rows, 0
        facts_height = sum(max(1, -(-len(line) // width)) for line in facts)
        shown = [row.display for row in rows]

        def needed(extra: int) -> int:  # header, rows, the facts' margin, facts
            return 1 + sum(shown) + 1 + facts_height + extra

        hidden = 0
        for i in reversed(range(len(rows))):
            if needed(1 if hidden else 0) <= height:
                break
            row = rows[i]
            if shown[i] and row.metric not in ruled and row.level < Level.WARNING:
                shown[i] = False
                hidden += 1
        kept = tuple(
            r if s == r.display else replace(r, display=False)
            for r, s in zip(rows, shown, strict=True)
        )
        return kept, hidden

    def _over(self, rows: tuple[MetricRow, ...], facts: list[str]) -> int:
        """Lines the table (with its titles), the margin and the ``facts`` need beyond
        the panel's height (0 when they fit, or before the panel is laid out)."""
        height = self.content_size.height
        needed = 1 + sum(r.display for r in rows) + 1 + len(facts)
        return max(0, needed - height) if height > 0 else 0

    def row(self, metric: str) -> MetricRow:
        """The row of ``metric`` as shown (for tests); KeyError when it has none."""
        for row in self.query_one(MetricTable).rows:
            if row.metric == metric:
                return row
        raise KeyError(metric)
