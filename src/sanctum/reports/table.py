"""The reports' plain-text tables: a title line, then one line per row, each cell padded
to its column (right-aligned where the column says), one blank between two.

A column of width 0 takes its text as it is: the last column of a table (``result``,
``1st crit``) and, titled ``""``, the wider gap before it. A row may stop short of the
last columns (a metric never measured has no minimum). The columns are the run table's
(:class:`sanctum.text.run_table.Column`); these tables never drop one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from sanctum.text.run_table import Column

GAP: Final = Column("", 0)
"""An empty column: a second blank before the one after it."""


def table_lines(
    columns: Sequence[Column], rows: Iterable[Sequence[str]], indent: str = ""
) -> list[str]:
    """The title line and one line per row, each line after ``indent``."""
    return [_line(columns, [c.title for c in columns], indent)] + [
        _line(columns, row, indent) for row in rows
    ]


def _line(columns: Sequence[Column], cells: Sequence[str], indent: str) -> str:
    padded = (
        cell.rjust(column.width) if column.right else cell.ljust(column.width)
        for column, cell in zip(columns, cells, strict=False)  # a short row: its first cells
    )
    return indent + " ".join(padded)


def right(*titles: str, width: int) -> tuple[Column, ...]:
    """Right-aligned columns of one width (figures), one per title."""
    return tuple(Column(title, width, right=True) for title in titles)
