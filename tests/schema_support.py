"""Validate event logs line by line against the shipped JSON Schema (``sanctum schema``).

Every test that produces a real log (the trainer, the examples, the integrations) calls
:func:`assert_valid_log`, so the schema and what the project writes cannot drift apart.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from jsonschema import Draft202012Validator

from telemetry.schema import shipped_schema_text


@cache
def validator() -> Draft202012Validator:
    schema = json.loads(shipped_schema_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def line_errors(line: str) -> list[str]:
    """Why one line is not a valid event (empty when it is)."""
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(line)'}: {e.message}"
        for e in validator().iter_errors(json.loads(line))
    ]


def assert_valid_log(path: Path) -> int:
    """Every line of ``path`` is a valid event; returns how many lines were checked."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines, f"{path} is empty"
    for number, line in enumerate(lines, 1):
        errors = line_errors(line)
        assert not errors, f"{path}:{number}: {errors}"
    return len(lines)
