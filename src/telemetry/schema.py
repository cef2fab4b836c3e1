"""The event contract as a JSON Schema, generated from the msgspec types.

``msgspec.json.schema`` describes the types; two things of the contract are not in the
types and are added here: a float may be written as the string ``"NaN"``, ``"Infinity"`` or
``"-Infinity"`` (the codec spells non-finite floats so, strict JSON has no literal for
them), and the schema names its draft, its version of the contract and what it allows a
reader to ignore. The result ships in the package (``events.schema.json``, and a copy in
``docs/``; a test keeps both equal to what this module generates) and ``sanctum schema``
prints it, so a writer in another language can validate its own lines.

The same definitions render as the Markdown field table of ``ppo_update`` that
``docs/design.md`` and the README hold between ``<!-- fields:begin -->`` and
``<!-- fields:end -->`` (``python -m telemetry.schema --docs`` refreshes them; a test
fails when a copy is stale).

One line of an event log is one instance of the schema. Unknown fields are allowed
(readers ignore them: additive changes are minor versions); an event kind this schema does
not list fails validation here, while readers skip and count it.
"""

from __future__ import annotations

import inspect
import json
import types
from importlib import resources
from pathlib import Path
from typing import Any, Final, Union, get_args, get_origin

import msgspec

from telemetry.events import (
    SCHEMA_MAJOR,
    SCHEMA_MINOR,
    Event,
    FieldDoc,
    PPOUpdatePayload,
    bare_type,
    field_docs,
)

SCHEMA_FILE = "events.schema.json"
"""The generated schema's file name, in this package and in ``docs/``."""
DRAFT = "https://json-schema.org/draft/2020-12/schema"
NONFINITE = {"enum": ["NaN", "Infinity", "-Infinity"]}
"""How the codec spells a non-finite float."""
_KEPT_BESIDE = ("default", "description", "title")
"""Keywords of a number's schema that stay beside the ``anyOf`` rather than inside it."""


def event_schema() -> dict[str, Any]:
    """The JSON Schema of one event-log line (the tagged union of every event kind)."""
    schema = _with_nonfinite_floats(_clean_descriptions(msgspec.json.schema(Event)))
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


def _clean_descriptions(node: Any) -> Any:
    """``node`` with every description cleaned as ``inspect.cleandoc`` cleans a docstring
    (msgspec 0.22 did so for the struct docstrings it copies in; 0.23 copies them as
    written, indented): the same schema whichever msgspec generates it."""
    if isinstance(node, list):
        return [_clean_descriptions(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: inspect.cleandoc(value)
        if key == "description" and isinstance(value, str)
        else _clean_descriptions(value)
        for key, value in node.items()
    }


def _with_nonfinite_floats(node: Any) -> Any:
    """``node`` with every ``{"type": "number"}`` also accepting the non-finite spellings
    its bounds let through: NaN is within no bound, and each bound shuts out its infinity
    (``ts``, finite and at least 0, takes none)."""
    if isinstance(node, list):
        return [_with_nonfinite_floats(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _with_nonfinite_floats(value) for key, value in node.items()}
    if node.get("type") != "number":
        return node
    spelled = [
        name
        for name, bound in (("NaN", None), ("Infinity", "maximum"), ("-Infinity", "minimum"))
        if bound not in node and (name != "NaN" or not {"minimum", "maximum"} & node.keys())
    ]
    if not spelled:
        return node
    kept = {key: node.pop(key) for key in _KEPT_BESIDE if key in node}
    return {"anyOf": [node, NONFINITE if len(spelled) == 3 else {"enum": spelled}], **kept}


def schema_text() -> str:
    """The schema as the shipped file holds it: indented JSON, keys in generation order."""
    return json.dumps(event_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema_text() -> str:
    """The schema file shipped in this package."""
    return resources.files("telemetry").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


FIELDS_BEGIN: Final = "<!-- fields:begin -->"
FIELDS_END: Final = "<!-- fields:end -->"
DOCS_WITH_FIELDS: Final = ("docs/design.md", "README.md")
"""Files, relative to the project root, that hold the generated field table."""
REFRESH_DOCS: Final = "python -m telemetry.schema --docs"


def range_text(low: float | None, high: float | None) -> str:
    """``[0, 1]``, ``>= 0``, ``<= 1``, or empty when unbounded."""
    if low is not None and high is not None:
        return f"[{low:g}, {high:g}]"
    if low is not None:
        return f">= {low:g}"
    return "" if high is None else f"<= {high:g}"


def _type_text(doc: FieldDoc) -> str:
    union = isinstance(doc.type, types.UnionType) or get_origin(doc.type) is Union
    members = [bare_type(t) for t in (get_args(doc.type) if union else (doc.type,))]
    names = [getattr(t, "__name__", str(t)) for t in members if t is not type(None)]
    return " | ".join(names) + (", required" if doc.required else "")


def _range_cell(doc: FieldDoc) -> str:
    text = range_text(doc.facts.get("min"), doc.facts.get("max"))
    if text and "estimator" in doc.facts:
        text += f" unless `{doc.facts['estimator']}` is a signed estimator"
    return text


def field_table(struct: type[msgspec.Struct] = PPOUpdatePayload) -> str:
    """The Markdown table of ``struct``'s fields: name, type, range, unit, definition."""
    rows = [
        f"<!-- generated from the definitions in telemetry/events.py: {REFRESH_DOCS} -->",
        "| field | type | range | unit | how it is computed |",
        "|---|---|---|---|---|",
    ]
    for doc in field_docs(struct):
        cells = (f"`{doc.name}`", _type_text(doc), _range_cell(doc), doc.facts.get("unit", ""))
        rows.append("| " + " | ".join((*cells, doc.description.replace("|", "\\|"))) + " |")
    return "\n".join(rows) + "\n"


def with_field_table(text: str, table: str | None = None) -> str:
    """``text`` with the region between the field markers replaced by the generated table
    (the prose around it kept); ValueError when the markers are missing."""
    head, begin, rest = text.partition(FIELDS_BEGIN + "\n")
    _, end, tail = rest.partition(FIELDS_END)
    if not begin or not end:
        raise ValueError(f"no {FIELDS_BEGIN} ... {FIELDS_END} region")
    return head + begin + (field_table() if table is None else table) + end + tail


def refresh_docs(root: Path) -> list[Path]:
    """Rewrite the field table of every file of :data:`DOCS_WITH_FIELDS` under ``root``
    that is stale; the files rewritten."""
    table, changed = field_table(), []
    for name in DOCS_WITH_FIELDS:
        path = root / name
        text = path.read_text(encoding="utf-8")
        if (fresh := with_field_table(text, table)) != text:
            path.write_text(fresh, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":  # python -m telemetry.schema > src/telemetry/events.schema.json
    import sys  # python -m telemetry.schema --docs [ROOT]: refresh the docs' field tables

    if sys.argv[1:2] == ["--docs"]:
        for path in refresh_docs(Path(sys.argv[2] if len(sys.argv) > 2 else ".")):
            print(f"refreshed {path}")
    else:
        sys.stdout.write(schema_text())
