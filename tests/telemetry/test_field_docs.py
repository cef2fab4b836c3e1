"""The field tables of docs/design.md and the README are generated from the contract's
definitions, and stay so: a stale copy fails here with the command that refreshes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from telemetry.events import PPOUpdatePayload, field_docs
from telemetry.schema import (
    DOCS_WITH_FIELDS,
    FIELDS_BEGIN,
    FIELDS_END,
    REFRESH_DOCS,
    field_table,
    range_text,
    with_field_table,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", DOCS_WITH_FIELDS)
def test_each_field_table_is_what_the_contract_generates(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert with_field_table(text) == text, f"{name}'s field table is stale: run {REFRESH_DOCS}"


def test_the_table_has_one_row_per_field_with_its_definition() -> None:
    rows = field_table().splitlines()[3:]
    docs = field_docs(PPOUpdatePayload)
    assert [row.split(" | ")[0] for row in rows] == [f"| `{d.name}`" for d in docs]
    for row, doc in zip(rows, docs, strict=True):
        assert row.endswith(f" {doc.description.replace('|', chr(92) + '|')} |")
    approx_kl = next(row for row in rows if row.startswith("| `approx_kl` |"))
    assert "| float | >= 0 unless `kl_estimator` is a signed estimator | nats |" in approx_kl
    assert rows[0].startswith("| `update` | int, required |  |  | ")


def test_the_prose_around_the_table_is_kept() -> None:
    text = f"before\n{FIELDS_BEGIN}\nold | table\n{FIELDS_END}\nafter\n"
    assert with_field_table(text, "T\n") == f"before\n{FIELDS_BEGIN}\nT\n{FIELDS_END}\nafter\n"


def test_a_file_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="fields:begin"):
        with_field_table("no markers here\n")


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [(0.0, 1.0, "[0, 1]"), (0.0, None, ">= 0"), (None, 1.0, "<= 1"), (None, None, "")],
)
def test_a_range_reads_as_its_bounds(low: float | None, high: float | None, text: str) -> None:
    assert range_text(low, high) == text
