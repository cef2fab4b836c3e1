"""docs/design.md describes the event contract the code writes: every kind, every field, in
the place that describes that kind, and no field the code does not have."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from telemetry.events import EVENT_TYPES, Envelope, kind_of

DESIGN = Path(__file__).resolve().parents[1] / "docs" / "design.md"
TEXT = DESIGN.read_text(encoding="utf-8")
CODE_NAME = re.compile(r"`([a-z][a-z0-9_]*)`")


def payload_fields(kind: str) -> set[str]:
    cls = next(c for c in EVENT_TYPES if kind_of(c) == kind)
    payload = next(f.type for f in msgspec.structs.fields(cls) if f.name == "payload")
    return {f.name for f in msgspec.structs.fields(payload)}


def kind_bullet(kind: str) -> str:
    """The text of the ``- `kind`:`` bullet of section 4, continuation lines included."""
    found = re.search(rf"^  - `{kind}`:(.*?)(?=^  - |^- |^\n)", TEXT, re.M | re.S)
    assert found, f"docs/design.md has no bullet for the kind `{kind}`"
    return found.group(1)


def update_table() -> set[str]:
    """The field names in the first column of the PPOUpdatePayload table."""
    table = TEXT.split("### PPOUpdatePayload", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| ")]
    return {name.strip().strip("`") for row in rows[1:] for name in row.split(",")}


PLAIN_KINDS = [kind_of(c) for c in EVENT_TYPES if kind_of(c) != "ppo_update"]


@pytest.mark.parametrize("kind", PLAIN_KINDS)
def test_each_kind_bullet_names_exactly_its_payload_fields(kind: str) -> None:
    bullet = kind_bullet(kind)
    named = set(CODE_NAME.findall(bullet))
    fields = payload_fields(kind)
    assert fields <= named, f"`{kind}` misses {sorted(fields - named)} in docs/design.md"
    assert named <= fields, f"`{kind}` names {sorted(named - fields)}, not fields of the kind"


def test_the_update_table_lists_exactly_the_update_fields() -> None:
    assert "`PPOUpdatePayload`" in kind_bullet("ppo_update")
    fields, table = payload_fields("ppo_update"), update_table()
    assert fields <= table, f"the PPOUpdatePayload table misses {sorted(fields - table)}"
    assert table <= fields, f"the table lists {sorted(table - fields)}, not update fields"


def test_the_design_document_shows_the_envelope_and_payload_layout() -> None:
    tag = Envelope.__struct_config__.tag_field
    envelope = [tag, *(f.name for f in msgspec.structs.fields(Envelope))]
    assert envelope[-1] == "payload"
    assert "{" + ", ".join(f'"{name}"' for name in envelope) + "}" in TEXT
    assert '"payload":{' in TEXT
