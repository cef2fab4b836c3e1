"""What the run table says, as text: its columns, laid out for the width it gets.

One line per run (or, with seeds grouped, per group) as spans of (text, key): the widget
maps a key to a style (``header``, a level name, ``muted``, or a colour index for the
swatch that ties a row to its line in the overlay). A table short of room drops its least
needed columns first (steps per second, then progress...), never the name, the verdict or
the figures a sweep is compared on; ``—`` is a figure not known yet. Names from a log are
made visible (control characters escaped) and cut in the middle, where run ids differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from sanctum.charts.glyphs import KeyedSpans, StyleKey
from sanctum.formatting import (
    EMPTY_CELL,
    format_count,
    format_duration,
    format_kl,
    format_value,
    visible,
)
from sanctum.health.levels import Level, verdict_word
from sanctum.model.board import GroupRow, RunRow, Spread
from sanctum.model.snapshot import Connection
from sanctum.model.verdict import RunVerdict
from sanctum.text.panels import CONNECTION_MARK, connection_word

NAME_MIN: Final = 12
SWATCH: Final = "━━"
VERDICT_WIDTH: Final = 17
"""``FAIL: KL 22x (+1)``, ``FAIL: interrupted``. An 80-column table drops the steps per
second and the progress (the update is there) and keeps the status."""
"""The worst KL's decimals when the board's rule table has no KL rule (a rule's own
``decimals`` win: a thresholds file that changes them changes the table too)."""


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its title, its width (0: takes the room left), right-aligned or not,
    and when it goes on a narrow table (higher first; 0: never)."""

    title: str
    width: int
    right: bool = False
    drop: int = 0


RUN_COLUMNS: Final = (
    Column("", 2),
    Column("run", 0),
    Column("status", 13, drop=2),
    Column("verdict", VERDICT_WIDTH),
    Column("prog", 4, right=True, drop=3),
    Column("update", 7, right=True),
    Column("steps/s", 7, right=True, drop=4),
    Column("return", 8, right=True),
    Column("worst KL", 8, right=True),
)
GROUP_COLUMNS: Final = (
    Column("", 2),
    Column("group", 0),
    Column("n", 2, right=True),
    Column("status", 9, drop=5),
    Column("verdict", 9),
    Column("prog", 4, right=True, drop=3),
    Column("update", 7, right=True, drop=2),
    Column("steps/s", 7, right=True, drop=4),
    Column("return", 7, right=True),
    Column("min…max", 13, right=True),
    Column("worst KL", 8, right=True),
    Column("min…max", 15, right=True),
)


def layout(columns: Sequence[Column], width: int) -> list[Column]:
    """The columns that fit ``width`` (one blank between two), the name taking the rest:
    columns go by their ``drop`` order until the name gets NAME_MIN cells."""
    kept = list(columns)
    for rank in sorted({c.drop for c in columns if c.drop}, reverse=True):
        if _name_room(kept, width) >= NAME_MIN:
            break
        kept = [c for c in kept if c.drop != rank]
    room = max(1, _name_room(kept, width))
    return [replace(c, width=room) if c.width == 0 else c for c in kept]


def _name_room(columns: Sequence[Column], width: int) -> int:
    return width - sum(c.width for c in columns) - (len(columns) - 1)


def header(columns: Sequence[Column]) -> KeyedSpans:
    """The column titles."""
    return _line(columns, [(c.title, "header") for c in columns])


def _line(columns: Sequence[Column], cells: Sequence[tuple[str, StyleKey]]) -> KeyedSpans:
    """Cells (by title order) cut or padded to their columns, one blank between two."""
    line: KeyedSpans = []
    for i, (column, (text, key)) in enumerate(zip(columns, cells, strict=True)):
        if i:
            line.append((" ", ""))
        shown = fit_middle(text, column.width) if column.width else text
        line.append((shown.rjust(column.width) if column.right else shown.ljust(column.width), key))
    return line


def fit_words(text: str, width: int) -> str:
    """``text`` (space-separated settings, ``lr=0.01 clip=0.2``) in ``width`` cells: whole,
    or its first words that fit and ``+N`` for the N left out, so two labels that differ in
    a word are never cut into the same ``a=t…s=1`` (:func:`fit_middle` on a word that alone
    is too wide)."""
    if len(text) <= width:
        return text
    words = text.split(" ")
    for kept in range(len(words) - 1, 0, -1):
        shown = f"{' '.join(words[:kept])} +{len(words) - kept}"
        if len(shown) <= width:
            return shown
    more = f" +{len(words) - 1}" if len(words) > 1 else ""
    return fit_middle(words[0], width - len(more)) + more if width > len(more) else "…"[:width]


def fit_middle(text: str, width: int) -> str:
    """``text`` in ``width`` cells: whole, or its start and end around ``…``."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


# -- runs --------------------------------------------------------------------------------------


def status_text(row: RunRow) -> str:
    """``● LIVE``, ``◐ STALE 0:42``, ``✖ UNREADABLE``..."""
    if row.problem is not None:
        return "✖ UNREADABLE"
    text = connection_word(row.connection)
    return text if row.silent is None else f"{text} {format_duration(row.silent)}"


def connection_key(connection: Connection) -> str:
    """The style key of a connection state: ``connection-live``..."""
    return f"connection-{connection.value}"


def run_line(
    columns: Sequence[Column], row: RunRow, colour: int, kl_decimals: int | None = None
) -> KeyedSpans:
    """One run's line, for the columns kept."""
    kl = row.worst_kl
    cells: dict[str, tuple[str, StyleKey]] = {
        "": (SWATCH, colour),
        "run": (visible(row.label), ""),
        "status": (
            status_text(row),
            "critical" if row.problem else connection_key(row.connection),
        ),
        "verdict": (
            verdict_text(row.verdict, VERDICT_WIDTH) if row.problem is None else EMPTY_CELL,
            row.level.value,
        ),
        "prog": (_percent(row.progress), "muted"),
        "update": (EMPTY_CELL if row.update is None else f"u{row.update}", ""),
        "steps/s": (_rate(row.steps_per_second), "muted"),
        "return": (format_value(row.last_return, absent=EMPTY_CELL), ""),
        "worst KL": (format_kl(kl.value, kl_decimals, EMPTY_CELL), _band(kl.level)),
    }
    return _line(columns, [cells[c.title] for c in columns])


def verdict_text(verdict: RunVerdict, width: int) -> str:
    """The run's verdict in ``width`` cells: its first row and how many more (``FAIL: KL
    22x (+1)``), and the rules it rests on when some measured nothing (``OK · 5/6
    rules``); without the count of the others, then without the rules' count, when that
    does not fit."""
    text = verdict.short
    if len(text) > width and verdict.items:
        first = f"{verdict.word}: {verdict.items[0]}"
        ruled = f"{first} · {verdict.rules_judged.split()[0]}" if verdict.rules_judged else first
        text = ruled if len(ruled) <= width else first
    return text


def _percent(fraction: float | None) -> str:
    return EMPTY_CELL if fraction is None else f"{fraction:.0%}"


def _rate(rate: float | None) -> str:
    if rate is None or not math.isfinite(rate):
        return EMPTY_CELL
    return format_count(round(rate))


def _band(level: Level) -> str:
    """A figure in the healthy band reads plain; the others take their level's colour."""
    return "" if level is Level.HEALTHY else level.value


# -- groups ------------------------------------------------------------------------------------


def group_line(
    columns: Sequence[Column], group: GroupRow, colour: int, kl_decimals: int | None = None
) -> KeyedSpans:
    """One group's line, for the columns kept (the second ``min…max`` is the KL's)."""
    cells: list[tuple[str, StyleKey]] = []
    ranges = 0
    for column in columns:
        if column.title == "min…max":
            spread = (group.last_return, group.worst_kl)[ranges]
            cells.append((range_text(spread, column.width), "muted"))
            ranges += 1
        elif column.title == "group" and column.width:
            cells.append((fit_words(visible(group.label), column.width), ""))
        else:
            cells.append(_group_cell(column.title, group, colour, kl_decimals))
    return _line(columns, cells)


def _group_cell(
    title: str, group: GroupRow, colour: int, kl_decimals: int | None
) -> tuple[str, StyleKey]:
    if title == "":
        return SWATCH, colour
    if title == "group":
        return visible(group.label), ""
    if title == "n":
        return str(len(group.members)), "muted"
    if title == "status":
        return connections_text(group.connections), ""
    if title == "verdict":
        return group_verdict(group), group.level.value
    if title == "prog":
        return _percent(group.progress.median), "muted"
    if title == "update":
        return (EMPTY_CELL if group.update is None else f"u{group.update}"), ""
    if title == "steps/s":
        return _rate(group.steps_per_second.median), "muted"
    if title == "return":
        return format_value(group.last_return.median, absent=EMPTY_CELL), ""
    return format_kl(group.worst_kl.median, kl_decimals, EMPTY_CELL), _band(group.worst_kl_level)


def group_verdict(group: GroupRow) -> str:
    """``FAIL 1/3``: the worst member's level and how many members are at it."""
    word = verdict_word(group.level)
    n = len(group.members)
    return word if group.at_level == n else f"{word} {group.at_level}/{n}"


def connections_text(connections: Sequence[Connection]) -> str:
    """``●2 ■1``: how many members are in each connection state."""
    counts = {c: connections.count(c) for c in Connection if c in connections}
    return " ".join(f"{CONNECTION_MARK[c]}{n}" for c, n in counts.items())


def range_text(spread: Spread, width: int) -> str:
    """``17.5…26.1``: the smallest and largest value, in as many digits as fit."""
    if spread.low is None or spread.high is None:
        return EMPTY_CELL
    for digits in (3, 2, 1):
        text = f"{short(spread.low, digits)}…{short(spread.high, digits)}"
        if len(text) <= width:
            return text
    return text


def short(value: float, digits: int = 3) -> str:
    """``value`` in ``digits`` significant digits (thousands whole)."""
    if not math.isfinite(value):
        return format_value(value)
    if abs(value) >= 10**digits:
        return format_count(round(value))
    return f"{value:.{digits}g}"
