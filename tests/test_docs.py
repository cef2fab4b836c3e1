"""docs/design.md describes the event contract the code writes: every kind, every field."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from telemetry.events import EVENT_TYPES, Envelope, kind_of

DESIGN = Path(__file__).resolve().parents[1] / "docs" / "design.md"


def contract() -> list[tuple[str, str]]:
    """(kind, field) for every payload field of every kind, and the envelope's fields."""
    pairs = [("envelope", f.name) for f in msgspec.structs.fields(Envelope)]
    for cls in EVENT_TYPES:
        payload = next(f.type for f in msgspec.structs.fields(cls) if f.name == "payload")
        pairs += [(kind_of(cls), f.name) for f in msgspec.structs.fields(payload)]
    return pairs


@pytest.mark.parametrize(("kind", "field"), contract(), ids=lambda x: str(x))
def test_every_field_of_the_contract_is_in_the_design_document(kind: str, field: str) -> None:
    text = DESIGN.read_text(encoding="utf-8")
    assert f"`{kind}`" in text or kind == "envelope"
    named = re.search(rf"`{field}[`:( ]|\| {field}\b|, {field}\b", text)
    assert named, f"docs/design.md does not describe {kind}.{field}"


def test_the_design_document_shows_the_envelope_and_payload_layout() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    assert '{"type", "run_id", "seq", "ts", "payload"}' in text
    assert '"payload":{' in text
