"""The event contract as a JSON Schema, generated from the msgspec types.

``msgspec.json.schema`` describes the types; two things of the contract are not in the
types and are added here: a float may be written as the string ``"NaN"``, ``"Infinity"`` or
``"-Infinity"`` (the codec spells non-finite floats so, strict JSON has no literal for
them), and the schema names its draft, its version of the contract and what it allows a
reader to ignore. The result ships in the package (``events.schema.json``, and a copy in
``docs/``; a test keeps both equal to what this module generates) and ``sanctum schema``
prints it, so a writer in another language can validate its own lines.

One line of an event log is one instance of the schema. Unknown fields are allowed
(readers ignore them: additive changes are minor versions); an event kind this schema does
not list fails validation here, while readers skip and count it.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import msgspec

from telemetry.events import SCHEMA_MAJOR, SCHEMA_MINOR, Event

SCHEMA_FILE = "events.schema.json"
"""The generated schema's file name, in this package and in ``docs/``."""
DRAFT = "https://json-schema.org/draft/2020-12/schema"
NONFINITE = {"enum": ["NaN", "Infinity", "-Infinity"]}
"""How the codec spells a non-finite float."""
_KEPT_BESIDE = ("default", "description", "title")
"""Keywords of a number's schema that stay beside the ``anyOf`` rather than inside it."""


def event_schema() -> dict[str, Any]:
    """The JSON Schema of one event-log line (the tagged union of every event kind)."""
    schema = _with_nonfinite_floats(msgspec.json.schema(Event))
    return {
        "$schema": DRAFT,
        "title": f"sanctum-ppo event log line, schema {SCHEMA_MAJOR}.{SCHEMA_MINOR}",
        "description": (
            "One line of a run's events.jsonl: an envelope (type, run_id, seq, ts) and the "
            "payload of its type. A float may be the string NaN, Infinity or -Infinity; an "
            "absent field is 'not measured'; unknown fields are ignored by readers."
        ),
        **schema,
    }


def _with_nonfinite_floats(node: Any) -> Any:
    """``node`` with every ``{"type": "number"}`` also accepting the non-finite spellings."""
    if isinstance(node, list):
        return [_with_nonfinite_floats(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _with_nonfinite_floats(value) for key, value in node.items()}
    if node.get("type") != "number":
        return node
    kept = {key: node.pop(key) for key in _KEPT_BESIDE if key in node}
    return {"anyOf": [node, NONFINITE], **kept}


def schema_text() -> str:
    """The schema as the shipped file holds it: indented JSON, keys in generation order."""
    return json.dumps(event_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema_text() -> str:
    """The schema file shipped in this package."""
    return resources.files("telemetry").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


if __name__ == "__main__":  # regenerate: python -m telemetry.schema > src/telemetry/...
    import sys

    sys.stdout.write(schema_text())
