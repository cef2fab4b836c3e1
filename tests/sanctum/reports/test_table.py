"""The reports' plain-text tables (:mod:`sanctum.reports.table`)."""

from __future__ import annotations

from sanctum.reports.table import GAP, table_lines
from sanctum.text.run_table import Column

COLUMNS = (Column("name", 6), Column("n", 4, right=True), GAP, Column("note", 0))


def test_cells_are_padded_to_their_column_with_one_blank_between_two() -> None:
    assert table_lines(COLUMNS, [("kl", "12", "", "past warning")]) == [
        "name      n  note",
        "kl       12  past warning",
    ]


def test_a_short_row_stops_after_its_last_cell_and_an_indent_leads_each_line() -> None:
    lines = table_lines(COLUMNS, [("loss", "not measured")], indent="  ")
    assert lines == ["  name      n  note", "  loss   not measured"]


def test_a_cell_wider_than_its_column_is_shown_whole() -> None:
    (_, line) = table_lines(COLUMNS[:2], [("entropy", "12345")])
    assert line == "entropy 12345"
